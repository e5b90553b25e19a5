import type { Services } from '../../context.ts';
import { type EntityManager, type Orm, preparedQuery } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import { type Application, ApplicationEntity } from './application.entity.ts';
import { ApplicationLogoEntity } from './application-logo.entity.ts';
import {
  type ApplicationRecord,
  type ApplicationSettings,
  type ApplicationSettingsPatch,
  ApplicationSettingsSchema,
} from './applications.schema.ts';
import type { OperatorContext, TenantContext } from './contexts.ts';

export const toApplicationRecord = (app: Application): ApplicationRecord => ({
  id: app.id,
  name: app.name,
  // the entity types the column as string; only the schema's values are ever written to it.
  environment: app.environment as ApplicationRecord['environment'],
  allowed_origins: app.allowedOrigins,
  reserved: app.reserved !== null,
  // Stored settings are completed with today's defaults, so keys added later read as their default.
  settings: ApplicationSettingsSchema.parse(app.settings),
  created_at: app.createdAt.toISOString(),
  updated_at: app.updatedAt.toISOString(),
});

/** A redirect target must sit on an allowed origin exactly (SECURITY 10). */
function checkRedirects(settings: ApplicationSettings, allowedOrigins: string[]): void {
  const url = settings.magic_link.redirect_url;
  if (url && !allowedOrigins.includes(new URL(url).origin)) {
    throw new AppError('invalid_url', 'settings.magic_link.redirect_url must be on one of the allowed_origins', [
      { path: 'settings.magic_link.redirect_url', message: 'origin not in allowed_origins' },
    ]);
  }
}

/**
 * A logo is shown on the hosted pages: in a production application only over https (a plain-http image on an https
 * page is mixed content). The URL already stored is kept as it is (the served logo's, under the server's base URL).
 */
function checkLogoUrl(settings: ApplicationSettings, environment: string, current: string | null): void {
  const url = settings.branding.logo_url;
  if (url && url !== current && environment === 'production' && !url.startsWith('https:')) {
    throw new AppError('invalid_url', 'settings.branding.logo_url must be an https URL in a production application', [
      { path: 'settings.branding.logo_url', message: 'not https' },
    ]);
  }
}

/** Where an application's uploaded logo is served (without its version). */
export const logoPath = (applicationId: string) => `/a/${applicationId}/logo`;

/** Whether `url` is the application's served logo (any version): a PATCH that keeps it keeps the stored bytes. */
const isServedLogoUrl = (baseUrl: string, applicationId: string, url: string): boolean => {
  const served = `${baseUrl}${logoPath(applicationId)}`;
  return url === served || url.startsWith(`${served}?`);
};

/**
 * Marks that the application has had traffic (a user or a session was created), in the caller's transaction if any. The
 * loaded application tells whether it is already marked, so this writes once per application, not per request.
 */
export async function markTraffic(em: EntityManager, application: Application): Promise<void> {
  if (application.firstTrafficAt) return;
  await preparedQuery(
    em,
    'mark_traffic',
    'update applications set first_traffic_at = now() where id = ? and first_traffic_at is null',
    [application.id],
  );
}

const parsedSettings = new WeakMap<object, ApplicationSettings>();
const MAX_PARSED_CONTENTS = 1000;
const parsedContents = new Map<string, ApplicationSettings>();

/** `value` and everything in it made read-only (a shared parse must not be changed by one of its readers). */
function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/**
 * An application's settings, completed with the defaults of keys added after it was created (frozen: the answer is
 * shared, by applications whose settings are the same too). Parsed once per settings object (a request asks several
 * times; an update assigns a new object), and once per content (each request reads its application's row afresh: a
 * new object with the same settings).
 */
export function settingsOf(app: Application): ApplicationSettings {
  let settings = parsedSettings.get(app.settings);
  if (!settings) {
    const content = JSON.stringify(app.settings);
    settings = parsedContents.get(content);
    if (!settings) {
      settings = deepFreeze(ApplicationSettingsSchema.parse(app.settings));
      if (parsedContents.size >= MAX_PARSED_CONTENTS) parsedContents.clear();
      parsedContents.set(content, settings);
    }
    parsedSettings.set(app.settings, settings);
  }
  return settings;
}

/**
 * An application as a plain record from its row (`select *` or `row_to_json`), for the read-only hot paths of
 * browser requests: mapping a managed entity costs more than the query. Secret-key routes, which may change the
 * application, load the managed entity.
 */
export const applicationFromRow = (a: Record<string, any>): Application => ({
  id: a.id,
  name: a.name,
  environment: a.environment,
  allowedOrigins: a.allowed_origins,
  settings: a.settings,
  firstTrafficAt: a.first_traffic_at === null ? null : new Date(a.first_traffic_at),
  reserved: a.reserved ?? null,
  createdAt: new Date(a.created_at),
  updatedAt: new Date(a.updated_at),
});

/**
 * An application as a hot path's statement reads it beside what it came for, without its row when this process holds
 * that very version of it. The version is the row's tuple: the transaction that wrote it and its place in the table
 * (`xmin`, `ctid`). Any change to the row writes a new tuple, so a version names one content (two changes in one
 * transaction write two tuples; only the last is ever visible to another). The statement answers the row as JSON only
 * when the version it reads differs from the one presented; the process keeps the last version of each application it
 * read, frozen (shared by the requests that read it), and its settings parsed once (`settingsOf`).
 */
interface KnownApplication {
  version: string;
  application: Application;
}
const MAX_KNOWN_APPLICATIONS = 10_000;
const knownApplications = new WeakMap<Services, Map<string, KnownApplication>>();

export interface VersionedApplication {
  /** Select-list columns `application` (the row as JSON, or null) and `application_version`, for the row `alias`. */
  sql: (alias: string) => string;
  /** The parameter of `sql`: the version this process holds. */
  params: unknown[];
  /** The application the statement answered with those two columns. */
  resolve(row: { application: Record<string, unknown> | null; application_version: string }): Application;
}

export function versionedApplication(services: Services, id: string): VersionedApplication {
  let known = knownApplications.get(services);
  if (!known) {
    known = new Map();
    knownApplications.set(services, known);
  }
  const cache = known;
  // Read now, and used below whatever another request stores meanwhile: the statement compared this version.
  const held = cache.get(id);
  const version = (alias: string) => `(${alias}.xmin::text || ':' || ${alias}.ctid::text)`;
  return {
    sql: (alias) =>
      `case when ${version(alias)} = ? then null else row_to_json(${alias}) end as application, ${version(alias)} as application_version`,
    params: [held?.version ?? null],
    resolve(row) {
      if (row.application === null) {
        if (held) return held.application;
        throw new Error('the statement compared no version, yet answered none');
      }
      const application = applicationFromRow(row.application);
      deepFreeze(application.settings);
      Object.freeze(application);
      if (cache.size >= MAX_KNOWN_APPLICATIONS && !cache.has(id)) cache.clear();
      cache.set(id, { version: row.application_version, application });
      return application;
    },
  };
}

/** The application with this id as a plain record (one prepared statement), or undefined; any string may be asked. */
export async function applicationById(em: EntityManager, id: string): Promise<Application | undefined> {
  if (!isUuid(id)) return undefined;
  const [row] = await preparedQuery<Record<string, unknown>>(em, 'application_by_id', 'select * from applications where id = ?', [
    id,
  ]);
  return row ? applicationFromRow(row) : undefined;
}

const mergeSettings = (current: unknown, patch: ApplicationSettingsPatch): ApplicationSettings =>
  ApplicationSettingsSchema.parse({ ...ApplicationSettingsSchema.parse(current ?? {}), ...patch });

/** Builds a new application in `em` (the caller's transaction); its first credentials are the setup module's. */
export function newApplication(
  em: EntityManager,
  input: {
    name: string;
    environment: 'development' | 'production';
    allowed_origins: string[];
    settings: ApplicationSettingsPatch;
  },
): Application {
  const settings = mergeSettings({}, input.settings);
  checkRedirects(settings, input.allowed_origins);
  checkLogoUrl(settings, input.environment, null);
  return em.create(ApplicationEntity, {
    id: newId(),
    firstTrafficAt: null,
    reserved: null,
    name: input.name,
    environment: input.environment,
    allowedOrigins: input.allowed_origins,
    settings,
  });
}

/** Whether the database holds a production application (a start-up check of development-only settings). */
export async function hasProductionApplications(orm: Orm): Promise<boolean> {
  return (await orm.em.fork().count(ApplicationEntity, { environment: 'production', reserved: null })) > 0;
}

export async function listApplications(ctx: OperatorContext, input: PageQuery) {
  const [rows, total] = await ctx.em.findAndCount(
    ApplicationEntity,
    {},
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: input.limit, offset: input.offset },
  );
  return { applications: rows.map(toApplicationRecord), total, limit: input.limit, offset: input.offset };
}

export async function deleteApplication(ctx: OperatorContext, id: string) {
  if (ctx.owns && !ctx.owns(id)) throw notFound('Application');
  // Every tenant-owned row references the application with ON DELETE CASCADE. A reserved application (the console)
  // is the service's own: it stays, or nobody could sign in to the console again.
  const deleted = await ctx.em.nativeDelete(ApplicationEntity, { id, reserved: null });
  if (!deleted) {
    if (isUuid(id) && (await ctx.em.count(ApplicationEntity, { id }))) {
      throw new AppError('conflict', 'This application is reserved (the console): it cannot be deleted');
    }
    throw notFound('Application');
  }
  return { id, deleted: true as const };
}

/** `/v1/applications/{id}/…` answers only for the application of `x-application-id`; any other id is 404. */
export function ownApplication(ctx: TenantContext, id: string): Application {
  if (ctx.application.id !== id) throw notFound('Application');
  return ctx.application;
}

export async function getApplication(ctx: TenantContext, id: string) {
  return toApplicationRecord(ownApplication(ctx, id));
}

export async function updateApplication(
  ctx: TenantContext,
  input: { id: string; name?: string; allowed_origins?: string[]; settings?: ApplicationSettingsPatch },
) {
  const app = ownApplication(ctx, input.id);
  const settings = input.settings ? mergeSettings(app.settings, input.settings) : ApplicationSettingsSchema.parse(app.settings);
  const origins = input.allowed_origins ?? app.allowedOrigins;
  checkRedirects(settings, origins);
  checkLogoUrl(settings, app.environment, settingsOf(app).branding.logo_url);
  const changes = { name: input.name ?? app.name, allowedOrigins: origins, settings, updatedAt: new Date() };
  const logoUrl = settings.branding.logo_url;
  // A logo URL set elsewhere replaces the uploaded logo: its bytes go.
  const dropsLogo =
    logoUrl !== settingsOf(app).branding.logo_url && !(logoUrl && isServedLogoUrl(ctx.services.baseUrl, app.id, logoUrl));
  if (dropsLogo) {
    await ctx.em.transactional(async (em) => {
      await em.nativeUpdate(ApplicationEntity, { id: app.id }, changes);
      await em.nativeDelete(ApplicationLogoEntity, { application: app.id });
    });
  } else await ctx.em.nativeUpdate(ApplicationEntity, { id: app.id }, changes);
  return toApplicationRecord({ ...app, ...changes });
}
