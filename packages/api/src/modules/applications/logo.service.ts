import { createHash } from 'node:crypto';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { notFound } from '../../errors.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { ApplicationLogoEntity } from './application-logo.entity.ts';
import { logoPath, ownApplication, settingsOf } from './applications.service.ts';
import type { TenantContext } from './contexts.ts';
import type { LogoContentType, PutLogoInput } from './logo.schema.ts';

/** The served URL of a logo: its version (the first 12 hex digits of its SHA-256) makes each upload a new URL. */
const servedLogoUrl = (baseUrl: string, applicationId: string, sha256: string) =>
  `${baseUrl}${logoPath(applicationId)}?v=${sha256.slice(0, 12)}`;

/** Sets `settings.branding.logo_url` in the stored settings (one statement: a concurrent PATCH of other keys stays). */
async function setLogoUrl(em: EntityManager, applicationId: string, url: string | null, now: Date): Promise<void> {
  await em.execute(
    `update applications set settings = jsonb_set(settings, '{branding}', coalesce(settings->'branding', '{}'::jsonb) || jsonb_build_object('logo_url', ?::text)), updated_at = ? where id = ?`,
    [url, now, applicationId],
  );
}

/**
 * Stores the application's logo (replacing any earlier one) and points `settings.branding.logo_url` at where it is
 * served. The schema checked the type, the size and the first bytes.
 */
export async function putLogo(ctx: TenantContext, input: PutLogoInput) {
  const app = ownApplication(ctx, input.id);
  const bytes = Buffer.from(input.data, 'base64');
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  const url = servedLogoUrl(ctx.services.baseUrl, app.id, sha256);
  const now = new Date();
  await ctx.em.transactional(async (em) => {
    // The application's row first: two uploads at once take turns on it.
    await setLogoUrl(em, app.id, url, now);
    await em.execute(
      `insert into application_logos (id, application_id, created_at, updated_at, content_type, data, sha256)
       values (?, ?, ?, ?, ?, ?, ?)
       on conflict (application_id) do update
       set content_type = excluded.content_type, data = excluded.data, sha256 = excluded.sha256, updated_at = excluded.updated_at`,
      [newId(), app.id, now, now, input.content_type, bytes, sha256],
    );
  });
  return {
    application_id: app.id,
    logo_url: url,
    content_type: input.content_type,
    size: bytes.length,
    sha256,
    updated_at: now.toISOString(),
  };
}

/**
 * Removes the application's logo, uploaded or linked: the stored bytes go and `settings.branding.logo_url` becomes
 * null. 404 when it has neither.
 */
export async function deleteLogo(ctx: TenantContext, id: string) {
  const app = ownApplication(ctx, id);
  await ctx.em.transactional(async (em) => {
    const removed = await em.nativeDelete(ApplicationLogoEntity, { application: app.id });
    if (!removed && settingsOf(app).branding.logo_url === null) throw notFound('Logo');
    await setLogoUrl(em, app.id, null, new Date());
  });
  return { id: app.id, deleted: true as const };
}

export interface StoredLogo {
  contentType: LogoContentType;
  data: Buffer;
  sha256: string;
}

/** The stored logo of the application with this id (any string may be asked), for `GET /a/{id}/logo`. */
export async function storedLogo(em: EntityManager, applicationId: string): Promise<StoredLogo | undefined> {
  if (!isUuid(applicationId)) return undefined;
  const [row] = await preparedQuery<{ content_type: LogoContentType; data: Uint8Array; sha256: string }>(
    em,
    'stored_logo',
    'select content_type, data, sha256 from application_logos where application_id = ?',
    [applicationId],
  );
  if (!row) return undefined;
  // pg answers a Buffer, PGlite a Uint8Array: the same bytes either way, without a copy.
  const data = Buffer.isBuffer(row.data) ? row.data : Buffer.from(row.data.buffer, row.data.byteOffset, row.data.byteLength);
  return { contentType: row.content_type, data, sha256: row.sha256 };
}
