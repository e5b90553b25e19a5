import type { Interaction } from 'oidc-provider';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomSecret, sha256 } from '../../lib/crypto.ts';
import { deleteInBatches, type PurgeStep } from '../../lib/housekeeping.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import type { BanStep } from '../users/users.hooks.ts';
import type { MergeStep } from '../users/users.merge.ts';
import { findUser } from '../users/users.service.ts';
import { revokeGrant } from './oauth2.adapter.ts';
import { acrOfAal, providerFor, STANDARD_SCOPES } from './oauth2.provider.ts';
import type { GrantRecord, OAuth2ClientRecord } from './oauth2.schema.ts';
import { type OAuth2Client, OAuth2ClientEntity } from './oauth2-client.entity.ts';
import { OAuth2GrantEntity } from './oauth2-grant.entity.ts';

const STANDARD_DESCRIPTIONS: Record<(typeof STANDARD_SCOPES)[number], string> = {
  openid: 'Sign you in with your account',
  profile: 'Read your name and picture',
  email: 'Read your email address',
  organization: 'Know which organization you are signed in to and your role in it',
  offline_access: 'Stay connected when you are not using it',
};

const toClientRecord = (client: OAuth2Client): OAuth2ClientRecord => ({
  id: client.id,
  name: client.name,
  // the entity types the column as string; only the schema's values are ever written to it.
  type: client.type as OAuth2ClientRecord['type'],
  redirect_uris: client.redirectUris,
  post_logout_redirect_uris: client.postLogoutRedirectUris ?? [],
  scopes: client.scopes,
  logo_url: client.logoUrl ?? null,
  dynamic: client.dynamic,
  created_at: client.createdAt.toISOString(),
  updated_at: client.updatedAt.toISOString(),
});

/** The scopes an application offers: the OpenID ones and its own (`settings.oauth2.scopes`), with their descriptions. */
export function offeredScopes(ctx: { application: Application }): Map<string, string> {
  const offered = new Map<string, string>(STANDARD_SCOPES.map((s) => [s, STANDARD_DESCRIPTIONS[s]]));
  for (const scope of settingsOf(ctx.application).oauth2.scopes) offered.set(scope.name, scope.description);
  return offered;
}

function checkScopes(ctx: TenantContext, scopes: string[]): string[] {
  const offered = offeredScopes(ctx);
  const unknown = scopes.filter((s) => !offered.has(s));
  if (unknown.length) {
    throw new AppError(
      'unknown_scope',
      'Unknown scope',
      unknown.map((s) => ({ path: 'scopes', message: `${s} is neither an OpenID scope nor one of settings.oauth2.scopes` })),
    );
  }
  return [...new Set(scopes)];
}

async function findClient(ctx: TenantContext, id: string): Promise<OAuth2Client> {
  const client = await ctx.em.findOne(OAuth2ClientEntity, { id, application: ctx.application.id });
  if (!client) throw notFound('OAuth client');
  return client;
}

const newClientSecret = () => randomSecret('gcs_');

export async function createClient(
  ctx: TenantContext,
  input: {
    name: string;
    redirect_uris: string[];
    post_logout_redirect_uris?: string[];
    type: 'public' | 'confidential';
    scopes: string[];
    logo_url?: string | null;
  },
) {
  const scopes = checkScopes(ctx, input.scopes);
  const secret = input.type === 'confidential' ? newClientSecret() : null;
  const client = ctx.em.create(OAuth2ClientEntity, {
    id: newId(),
    application: ctx.application.id,
    name: input.name,
    type: input.type,
    redirectUris: [...new Set(input.redirect_uris)],
    postLogoutRedirectUris: [...new Set(input.post_logout_redirect_uris ?? [])],
    scopes,
    logoUrl: input.logo_url ?? null,
    secretHash: secret ? sha256(secret) : null,
    dynamic: false,
  });
  await ctx.em.flush();
  return { ...toClientRecord(client), client_secret: secret };
}

export async function listClients(ctx: TenantContext) {
  const clients = await ctx.em.find(
    OAuth2ClientEntity,
    { application: ctx.application.id },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: 1000 },
  );
  return clients.map(toClientRecord);
}

export const getClient = async (ctx: TenantContext, id: string) => toClientRecord(await findClient(ctx, id));

export async function updateClient(
  ctx: TenantContext,
  input: {
    id: string;
    name?: string;
    redirect_uris?: string[];
    post_logout_redirect_uris?: string[];
    scopes?: string[];
    logo_url?: string | null;
  },
) {
  const client = await findClient(ctx, input.id);
  if (input.name !== undefined) client.name = input.name;
  if (input.redirect_uris !== undefined) client.redirectUris = [...new Set(input.redirect_uris)];
  if (input.post_logout_redirect_uris !== undefined)
    client.postLogoutRedirectUris = [...new Set(input.post_logout_redirect_uris)];
  if (input.scopes !== undefined) client.scopes = checkScopes(ctx, input.scopes);
  if (input.logo_url !== undefined) client.logoUrl = input.logo_url;
  client.updatedAt = new Date();
  await ctx.em.flush();
  return toClientRecord(client);
}

/** Deleting a client deletes its grants and, with them, every code and token issued to it. */
export async function deleteClient(ctx: TenantContext, id: string) {
  const client = await findClient(ctx, id);
  await ctx.em.transactional(async (em) => {
    const grants = await em.execute<Array<{ id: string }>>('select id from oauth2_grants where client_id = ?', [client.id]);
    for (const grant of grants) await revokeGrant(em, client.application, grant.id, 'client_deleted');
    await em.execute('delete from oauth2_artifacts where client_id = ? and application_id = ?', [client.id, client.application]);
    await em.execute('delete from oauth2_clients where id = ?', [client.id]);
  });
  return { id, deleted: true as const };
}

/** A new secret for a confidential client, shown once; the old one stops working at once. */
export async function rotateClientSecret(ctx: TenantContext, id: string) {
  const client = await findClient(ctx, id);
  if (client.type !== 'confidential')
    throw new AppError('validation_failed', 'A public client has no secret', [{ path: 'id', message: 'is a public client' }]);
  const secret = newClientSecret();
  client.secretHash = sha256(secret);
  client.updatedAt = new Date();
  await ctx.em.flush();
  return { ...toClientRecord(client), client_secret: secret };
}

// ——— Grants (S6) ———

const toGrantRecord = (row: {
  id: string;
  client_id: string;
  scopes: string[];
  created_at: Date;
  updated_at: Date;
}): GrantRecord => ({
  id: row.id,
  client_id: row.client_id,
  scopes: row.scopes,
  created_at: new Date(row.created_at).toISOString(),
  updated_at: new Date(row.updated_at).toISOString(),
});

async function grantsOf(em: EntityManager, applicationId: string, userId: string): Promise<GrantRecord[]> {
  const rows = await em.execute<Array<{ id: string; client_id: string; scopes: string[]; created_at: Date; updated_at: Date }>>(
    `select id, client_id, scopes, created_at, updated_at from oauth2_grants
      where application_id = ? and user_id = ? and expires_at > now() order by created_at desc, id desc limit 1000`,
    [applicationId, userId],
  );
  return rows.map(toGrantRecord);
}

async function revokeUsersGrant(em: EntityManager, applicationId: string, userId: string, grantId: string) {
  const owned = await em.count(OAuth2GrantEntity, { id: grantId, application: applicationId, user: userId });
  if (!owned || !(await revokeGrant(em, applicationId, grantId, 'revoked'))) throw notFound('Grant');
  return { id: grantId, deleted: true as const };
}

export const listMyGrants = (ctx: SignedInContext) => grantsOf(ctx.em, ctx.application.id, ctx.user.id);

export const revokeMyGrant = (ctx: SignedInContext, id: string) => revokeUsersGrant(ctx.em, ctx.application.id, ctx.user.id, id);

export async function listUserGrants(ctx: TenantContext, userId: string) {
  const user = await findUser(ctx, userId);
  return grantsOf(ctx.em, ctx.application.id, user.id);
}

export async function revokeUserGrant(ctx: TenantContext, input: { id: string; grant_id: string }) {
  const user = await findUser(ctx, input.id);
  return revokeUsersGrant(ctx.em, ctx.application.id, user.id, input.grant_id);
}

// ——— Login and consent interaction ———

async function interactionOf(ctx: TenantContext, uid: string) {
  const built = await providerFor(ctx.services, ctx.application.id);
  const interaction = built ? await built.provider.Interaction.find(uid) : undefined;
  if (!built || !interaction) throw notFound('Interaction');
  const clientId = String(interaction.params.client_id ?? '');
  if (!isUuid(clientId)) throw notFound('Interaction');
  const client = await findClient(ctx, clientId);
  const requested = [
    ...new Set(
      String(interaction.params.scope ?? '')
        .split(' ')
        .filter(Boolean),
    ),
  ];
  return { provider: built.provider, interaction, client, requested };
}

async function existingGrant(
  em: EntityManager,
  applicationId: string,
  provider: Built['provider'],
  userId: string,
  clientId: string,
) {
  const [row] = await em.execute<Array<{ id: string }>>(
    `select id from oauth2_grants where application_id = ? and user_id = ? and client_id = ? and expires_at > now()
      order by updated_at desc limit 1`,
    [applicationId, userId, clientId],
  );
  return row ? provider.Grant.find(row.id) : undefined;
}

/** What the application's sign-in page shows: the client and the scopes it asks for. */
export async function getInteraction(ctx: TenantContext, uid: string) {
  const { interaction, client, requested } = await interactionOf(ctx, uid);
  const offered = offeredScopes(ctx);
  return {
    uid: interaction.uid,
    client: { id: client.id, name: client.name, logo_url: client.logoUrl ?? null },
    scopes: requested.map((name) => ({ name, description: offered.get(name) ?? '' })),
    expires_at: new Date((interaction.exp ?? 0) * 1000).toISOString(),
  };
}

/**
 * The signed-in user approves (a subset of) the requested scopes: the grant records user, client and scopes (an
 * existing grant of theirs for this client is extended, so the same scopes later need no consent), and the browser
 * goes back to the provider to receive its code.
 */
export async function completeInteraction(ctx: SignedInContext, input: { uid: string; approved_scopes: string[] }) {
  const { provider, interaction, client, requested } = await interactionOf(ctx, input.uid);
  const user = ctx.user;
  const grantId = await saveGrant(
    ctx.em,
    ctx.application,
    provider,
    interaction,
    user.id,
    client.id,
    requested,
    input.approved_scopes,
    ctx.session.organization ?? null,
  );
  const session = ctx.session;
  interaction.result = {
    login: {
      accountId: user.id,
      remember: true,
      acr: acrOfAal(session.aal),
      ...(session.amr?.length ? { amr: session.amr } : {}),
      ts: Math.floor(session.createdAt.getTime() / 1000),
    },
    consent: { grantId },
  };
  await interaction.save(Math.max((interaction.exp ?? 0) - Math.floor(Date.now() / 1000), 1));
  return { redirect_to: interaction.returnTo };
}

type Built = NonNullable<Awaited<ReturnType<typeof providerFor>>>;

/**
 * The user approves `approved` of the `requested` scopes: the grant records user, client and scopes (an existing
 * grant of theirs for this client is extended, so the same scopes later need no consent); what they left unticked is
 * recorded as rejected, so the provider does not ask again for it. Answers the grant's id. Approving a scope that was
 * not requested is 422.
 */
export async function saveGrant(
  em: EntityManager,
  application: Application,
  provider: Built['provider'],
  interaction: Interaction,
  userId: string,
  clientId: string,
  requested: string[],
  approvedScopes: string[],
  organizationId: string | null,
): Promise<string> {
  const approved = [...new Set(approvedScopes)];
  const extra = approved.filter((s) => !requested.includes(s));
  if (extra.length) {
    throw new AppError(
      'validation_failed',
      'Only requested scopes can be approved',
      extra.map((s) => ({ path: 'approved_scopes', message: `${s} was not requested` })),
    );
  }
  let grant = await existingGrant(em, application.id, provider, userId, clientId);
  grant ??= new provider.Grant({ accountId: userId, clientId });
  const custom = new Set(settingsOf(application).oauth2.scopes.map((s) => s.name));
  const rejected = requested.filter((s) => !approved.includes(s));
  if (approved.length) grant.addOIDCScope(approved.join(' '));
  if (rejected.length) grant.rejectOIDCScope(rejected.join(' '));
  const resources = interaction.params.resource;
  for (const resource of Array.isArray(resources) ? resources : resources ? [resources] : []) {
    const scoped = approved.filter((s) => custom.has(s));
    const refused = rejected.filter((s) => custom.has(s));
    if (scoped.length) grant.addResourceScope(String(resource), scoped.join(' '));
    if (refused.length) grant.rejectResourceScope(String(resource), refused.join(' '));
  }
  const grantId = await grant.save();
  await setGrantOrganization(em, application.id, userId, clientId, organizationId);
  return grantId;
}

/**
 * The organization the user is working in (their session's active one) becomes the one of their grant for the client:
 * the `organization` scope's claims name it while the user is still a member. Every sign-in for the client sets it
 * again, through the consent (`saveGrant`) or a login that needs none (`finishLogin`); the grant's own saves never
 * touch it.
 */
export async function setGrantOrganization(
  em: EntityManager,
  applicationId: string,
  userId: string,
  clientId: string,
  organizationId: string | null,
) {
  await em.execute('update oauth2_grants set organization_id = ? where application_id = ? and user_id = ? and client_id = ?', [
    organizationId,
    applicationId,
    userId,
    clientId,
  ]);
}

export async function denyInteraction(ctx: TenantContext, uid: string) {
  const { interaction } = await interactionOf(ctx, uid);
  interaction.result = { error: 'access_denied', error_description: 'The user denied the request' };
  await interaction.save(Math.max((interaction.exp ?? 0) - Math.floor(Date.now() / 1000), 1));
  return { redirect_to: interaction.returnTo };
}

// ——— Users: merge moves grants; ban revokes them ———

export const mergeOAuth2Grants: MergeStep = async (em, { applicationId, sourceUserId, targetUserId }) => {
  const target = JSON.stringify(targetUserId);
  await em.execute(
    `update oauth2_grants set user_id = ?, payload = jsonb_set(payload, '{accountId}', ?::jsonb), updated_at = now()
      where application_id = ? and user_id = ?`,
    [targetUserId, target, applicationId, sourceUserId],
  );
  await em.execute(
    `update oauth2_artifacts set account_id = ?, payload = jsonb_set(payload, '{accountId}', ?::jsonb)
      where application_id = ? and account_id = ? and grant_id is not null`,
    [targetUserId, target, applicationId, sourceUserId],
  );
  // The source's sign-in sessions at the provider end: its next authorization signs in again (as the target).
  await em.execute(`delete from oauth2_artifacts where application_id = ? and account_id = ? and kind = 'Session'`, [
    applicationId,
    sourceUserId,
  ]);
};

export const revokeOAuth2GrantsOnBan: BanStep = async (em, user) => {
  const grants = await em.execute<Array<{ id: string }>>(
    'select id from oauth2_grants where application_id = ? and user_id = ?',
    [user.application, user.id],
  );
  for (const grant of grants) await revokeGrant(em, user.application, grant.id, 'user_banned');
  await em.execute(`delete from oauth2_artifacts where application_id = ? and account_id = ? and kind = 'Session'`, [
    user.application,
    user.id,
  ]);
};

// Expired codes, tokens, sessions and interactions go a day after they expired (a spent refresh token is kept until
// then, so its reuse is still recognized and revokes the grant); expired grants go with their artifacts.
export const purgeOAuth2Artifacts: PurgeStep = (em) =>
  deleteInBatches(em, 'oauth2_artifacts', `t.expires_at < now() - interval '1 day'`);
export const purgeOAuth2Grants: PurgeStep = (em) =>
  deleteInBatches(em, 'oauth2_grants', `t.expires_at < now() - interval '1 day'`);
