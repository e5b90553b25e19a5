import { baseUrlOf, type Services } from '../../context.ts';
import { type EntityManager, type Orm, preparedQuery } from '../../db/orm.ts';
import { notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import { type Application, ApplicationEntity } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { OperatorContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { OAuth2ClientEntity } from '../oauth2/oauth2-client.entity.ts';
import { revokeUserSessions } from '../sessions/sessions.service.ts';
import { MagicLinkEntity } from '../sign-in/magic-link/magic-link.entity.ts';
import type { SignInCheck } from '../sign-in/sign-in.service.ts';
import { createFirstSigningKey } from '../signing-keys/signing-keys.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import { normalizeEmail, toUserRecord } from '../users/users.service.ts';
import { type Operator, OperatorEntity } from './operator.entity.ts';
import { OperatorRoleEntity } from './operator-role.entity.ts';
import type { OperatorRoleName } from './operators.roles.ts';
import type { OperatorRecord } from './operators.schema.ts';

/** `applications.reserved` of the console application. */
const CONSOLE = 'console';

/** Where the console lives, under the base URL; its OpenID client's redirect and post-logout URIs, its sign-in link. */
export const consolePaths = (baseUrl: string) => ({
  callback: `${baseUrl}/console/callback`,
  home: `${baseUrl}/console/`,
  signIn: `${baseUrl}/console/sign-in`,
});

/** The console application's id per process (it never changes: it cannot be deleted). */
const consoleIds = new WeakMap<Services, string>();

/** The console application's id (one prepared statement the first time a process asks), or undefined before it exists. */
export async function consoleApplicationId(em: EntityManager, services: Services): Promise<string | undefined> {
  const known = consoleIds.get(services);
  if (known) return known;
  const [row] = await preparedQuery<{ id: string }>(em, 'console_application', 'select id from applications where reserved = ?', [
    CONSOLE,
  ]);
  if (row) consoleIds.set(services, row.id);
  return row?.id;
}

/**
 * The console application's id, its origin and its client's URIs brought in line with `baseUrl` (which may have
 * changed since it was created), in one statement; undefined when it does not exist yet. It needs only the database: a
 * start runs it while the HTTP server is being built.
 */
export async function syncConsoleApplication(orm: Orm, configuredBaseUrl: string): Promise<string | undefined> {
  const baseUrl = baseUrlOf(configuredBaseUrl);
  const origin = new URL(baseUrl).origin;
  const paths = consolePaths(baseUrl);
  const [row] = await preparedQuery<{ id: string }>(
    orm.em.fork(),
    'console_application_sync',
    `with console as (select id from applications where reserved = ?),
     origins as (
       update applications a set allowed_origins = ?::jsonb, updated_at = now()
         from console where a.id = console.id and a.allowed_origins <> ?::jsonb
     ),
     uris as (
       update oauth2_clients c set redirect_uris = ?::jsonb, post_logout_redirect_uris = ?::jsonb, updated_at = now()
         from console where c.application_id = console.id and c.redirect_uris <> ?::jsonb
     )
     select id from console`,
    [
      CONSOLE,
      JSON.stringify([origin]),
      JSON.stringify([origin]),
      JSON.stringify([paths.callback]),
      JSON.stringify([paths.home]),
      JSON.stringify([paths.callback]),
    ],
  );
  return row?.id;
}

/**
 * Creates the console application when it is absent: sign-up closed (only added operators have a user there), the
 * service's own origin allowed, its signing key, and the OpenID public client the console's page uses (code + PKCE,
 * `{base}/console/callback`). The insert is `on conflict do nothing` on the unique `reserved` marker, so processes
 * starting together on one database create it once: the others wait on the index, then insert nothing. Where it
 * exists, it is synced to the base URL (`syncConsoleApplication`).
 */
export async function ensureConsoleApplication(services: Services): Promise<{ id: string; created: boolean }> {
  const existing = await syncConsoleApplication(services.orm, services.baseUrl);
  if (existing) {
    consoleIds.set(services, existing);
    return { id: existing, created: false };
  }
  const em = services.orm.em.fork();
  const origin = new URL(services.baseUrl).origin;
  const paths = consolePaths(services.baseUrl);
  const id = newId();
  const created = await em.transactional(async (tx) => {
    const inserted = await tx.execute<Array<{ id: string }>>(
      `insert into applications (id, name, environment, allowed_origins, settings, reserved, created_at, updated_at)
       values (?, 'Gatehouse console', ?, ?::jsonb, ?::jsonb, ?, now(), now())
       on conflict (reserved) do nothing returning id`,
      [
        id,
        origin.startsWith('https:') ? 'production' : 'development',
        JSON.stringify([origin]),
        JSON.stringify({ sign_up: 'closed', branding: { display_name: 'Gatehouse console' } }),
        CONSOLE,
      ],
    );
    if (!inserted.length) return false;
    createFirstSigningKey(tx, services, id);
    tx.create(OAuth2ClientEntity, {
      id: newId(),
      application: id,
      name: 'Gatehouse console',
      type: 'public',
      redirectUris: [paths.callback],
      postLogoutRedirectUris: [paths.home],
      scopes: ['openid', 'profile', 'email'],
      logoUrl: null,
      secretHash: null,
      dynamic: false,
    });
    await tx.flush();
    return true;
  });
  consoleIds.delete(services);
  const actual = await consoleApplicationId(em, services);
  if (!actual) throw new Error('The console application could not be created');
  return { id: actual, created };
}

/** Whether any operator exists (the start-up says how to add the first one when none does). */
export async function hasOperators(orm: Orm): Promise<boolean> {
  const [row] = await preparedQuery<{ found: boolean }>(
    orm.em.fork(),
    'has_operators',
    'select exists(select 1 from operators) as found',
    [],
  );
  return row?.found === true;
}

async function consoleApplication(ctx: OperatorContext): Promise<Application> {
  const id = await consoleApplicationId(ctx.em, ctx.services);
  const application = id ? await ctx.em.findOne(ApplicationEntity, { id }) : null;
  if (!application) throw notFound('Console application');
  return application;
}

/** A role's application must exist and not be a reserved one (the console is managed by instance-wide owners). */
async function checkRoleApplication(em: EntityManager, applicationId: string | null): Promise<void> {
  if (applicationId === null) return;
  if (!(await em.count(ApplicationEntity, { id: applicationId, reserved: null }))) throw notFound('Application');
}

async function operatorRecords(em: EntityManager, operators: Operator[]): Promise<OperatorRecord[]> {
  if (!operators.length) return [];
  const users = await em.find(UserEntity, { id: { $in: operators.map((o) => o.user) } });
  const roles = await em.find(
    OperatorRoleEntity,
    { operator: { $in: operators.map((o) => o.id) } },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const emails = new Map(users.map((u) => [u.id, u.primaryEmail ?? '']));
  return operators.map((operator) => ({
    id: operator.id,
    user_id: operator.user,
    email: emails.get(operator.user) ?? '',
    roles: roles
      .filter((r) => r.operator === operator.id)
      // the column holds only OPERATOR_ROLES values (the schema's enum is the only writer).
      .map((r) => ({ application_id: r.application ?? null, role: r.role as OperatorRoleName })),
    created_at: operator.createdAt.toISOString(),
  }));
}

async function setRole(em: EntityManager, operatorId: string, applicationId: string | null, role: OperatorRoleName | null) {
  const existing = await em.findOne(OperatorRoleEntity, { operator: operatorId, application: applicationId });
  if (!role) {
    if (existing) em.remove(existing);
  } else if (existing) {
    existing.role = role;
    existing.updatedAt = new Date();
  } else {
    em.create(OperatorRoleEntity, { id: newId(), operator: operatorId, application: applicationId, role });
  }
}

/** The console user of `email`: found (verified now, and active again), or created verified. */
async function consoleUser(em: EntityManager, application: Application, email: string): Promise<User> {
  const normalized = normalizeEmail(email);
  const found = await em.findOne(UserEntity, { application: application.id, emailNormalized: normalized });
  if (found) {
    if (!found.emailVerified) {
      found.emailVerified = true;
      found.updatedAt = new Date();
      recordEvent(em, application.id, 'user.updated', toUserRecord(found));
    }
    return found;
  }
  const user = em.create(UserEntity, {
    id: newId(),
    application: application.id,
    primaryEmail: email,
    emailNormalized: normalized,
    emailVerified: true,
    status: 'active',
    profile: {},
    mergedInto: null,
  });
  recordEvent(em, application.id, 'user.created', toUserRecord(user));
  return user;
}

/**
 * Adds an operator (or gives an existing one this role): the console user of the address, the operator, the role, and
 * a sign-in link to the console — the console application's magic link (one use, its `magic_link.ttl_s`), stored as
 * SHA-256 and answered once.
 */
export async function addOperator(
  ctx: OperatorContext,
  input: { email: string; role: OperatorRoleName; application_id: string | null },
) {
  const application = await consoleApplication(ctx);
  await checkRoleApplication(ctx.em, input.application_id);
  return ctx.em.transactional(async (em) => {
    const user = await consoleUser(em, application, input.email);
    const existing = await em.findOne(OperatorEntity, { user: user.id });
    const operator = existing ?? em.create(OperatorEntity, { id: newId(), user: user.id });
    await setRole(em, operator.id, input.application_id, input.role);
    const token = randomSecret('ml_');
    const url = new URL(consolePaths(ctx.services.baseUrl).signIn);
    url.searchParams.set('token', token);
    const expiresAt = new Date(Date.now() + settingsOf(application).magic_link.ttl_s * 1000);
    em.create(MagicLinkEntity, {
      id: newId(),
      application: application.id,
      email: user.primaryEmail ?? input.email,
      emailNormalized: user.emailNormalized ?? normalizeEmail(input.email),
      tokenHash: sha256(token),
      redirectUrl: url.origin + url.pathname,
      hostId: null,
      pollSecretHash: null,
      confirmedAt: null,
      expiresAt,
      consumedAt: null,
    });
    await em.flush();
    const [record] = await operatorRecords(em, [operator]);
    if (!record) throw notFound('Operator');
    recordEvent(em, application.id, existing ? 'operator.updated' : 'operator.created', record);
    await em.flush();
    return { operator: record, sign_in_link: { url: url.toString(), expires_at: expiresAt.toISOString() } };
  });
}

export async function listOperators(ctx: OperatorContext, input: PageQuery) {
  const [rows, total] = await ctx.em.findAndCount(
    OperatorEntity,
    {},
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: input.limit, offset: input.offset },
  );
  return { operators: await operatorRecords(ctx.em, rows), total, limit: input.limit, offset: input.offset };
}

/**
 * Gives the operator `role` for the application (null: for every application), or takes their role there away
 * (`role` null). Their console calls are judged by it from their next request: roles are read on every call.
 */
export async function setOperatorRole(
  ctx: OperatorContext,
  input: { id: string; application_id: string | null; role: OperatorRoleName | null },
) {
  const application = await consoleApplication(ctx);
  await checkRoleApplication(ctx.em, input.application_id);
  return ctx.em.transactional(async (em) => {
    const operator = await em.findOne(OperatorEntity, { id: input.id });
    if (!operator) throw notFound('Operator');
    await setRole(em, operator.id, input.application_id, input.role);
    await em.flush();
    const [record] = await operatorRecords(em, [operator]);
    if (!record) throw notFound('Operator');
    recordEvent(em, application.id, 'operator.updated', record);
    await em.flush();
    return record;
  });
}

/**
 * Removes the operator and their roles, and revokes their console sessions in the same transaction: their tokens stop
 * working at the next request. Their console user stays (the audit log names it); it holds no role any more.
 */
export async function removeOperator(ctx: OperatorContext, id: string) {
  const application = await consoleApplication(ctx);
  return ctx.em.transactional(async (em) => {
    const operator = await em.findOne(OperatorEntity, { id });
    if (!operator) throw notFound('Operator');
    const [record] = await operatorRecords(em, [operator]);
    if (!record) throw notFound('Operator');
    await em.nativeDelete(OperatorEntity, { id });
    await revokeUserSessions(em, application.id, operator.user, 'operator_removed');
    recordEvent(em, application.id, 'operator.deleted', record);
    await em.flush();
    return { id, deleted: true as const };
  });
}

/**
 * Only operators sign in to the console application: a person whose operator was removed keeps their user there (the
 * audit log names it) but is refused (403 `access_denied`, `reason` `not_an_operator`), as a banned user would be.
 * Any other application's sign-ins have nothing to do with it (`clearSql`: a returning person's sign-in stays one
 * statement).
 */
export const consoleOperatorCheck: SignInCheck = {
  appliesTo: () => true,
  clearSql: `(not exists (select 1 from applications ca where ca.id = u.application_id and ca.reserved = '${CONSOLE}')
              or exists (select 1 from operators co where co.user_id = u.id))`,
  async check(em, application, user) {
    if (application.reserved !== CONSOLE) return null;
    return (await em.count(OperatorEntity, { user: user.id })) > 0 ? null : { reason: 'not_an_operator', rule_id: null };
  },
};
