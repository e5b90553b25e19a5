import { AsyncLocalStorage } from 'node:async_hooks';
import type { Services } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { sha256 } from '../../lib/crypto.ts';
import { isUuid } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { ApplicationSettingsSchema } from '../applications/applications.schema.ts';
import { applicationById, applicationFromRow } from '../applications/applications.service.ts';
import { EVENT_COLUMNS, EVENT_VALUES, eventRow } from '../events/events.service.ts';
import {
  type BrowserSession,
  type BrowserSessionRow,
  browserSessionCtes,
  browserSessionOfRow,
} from '../sessions/browser-sessions.ts';
import { oidcProvider } from './oidc-library.ts';

/** How long after a code or refresh token is spent a second use counts as a racing request, not a replay. */
const REPLAY_GRACE = '10 seconds';

type Payload = Record<string, unknown> & {
  grantId?: string;
  uid?: string;
  accountId?: string;
  clientId?: string;
  consumed?: unknown;
};

/** Artifacts that belong to a grant: deleting the grant deletes them (revocation of everything issued under it). */
const GRANT_BOUND = new Set([
  'AuthorizationCode',
  'AccessToken',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
]);

/**
 * What one provider request has read, and the rotation it has not written yet. Kept for the request only (never
 * across requests: a revocation on any process is seen by the next request).
 *
 * Reads: the artifact statement also returns the artifact's grant and user, which the provider asks for next (a
 * refresh, an introspection, userinfo: three reads in one statement), and the application statement the client of a
 * `Basic` Authorization header and the artifact its form presents (`applicationWithReads`). They are dropped at the
 * request's first write, so nothing read before a change is served after it.
 *
 * The rotation: a refresh spends its token (`consume`), then saves the new refresh token and the access token; a code
 * exchange spends its code, then saves the access token (and a refresh token, if one is issued). The
 * spending is held back and written with those saves in one statement (the conditional update, and the inserts only
 * if it took the row), at the request's next other statement or when the provider has built its answer, before it is
 * sent: a request that loses the race answers `invalid_grant` as it would at `consume`, and nothing is saved for it.
 */
interface RequestScope {
  reads: Map<string, Promise<unknown>>;
  /** The provider sessions this request read (hashed id → stored payload and expiry): kept across its writes. */
  sessions?: Map<string, { payload: Payload; expiresAt: number }>;
  rotation?: {
    em: EntityManager;
    applicationId: string;
    kind: 'RefreshToken' | 'AuthorizationCode';
    spent: string;
    saves: unknown[][];
  };
  /** The hosted browser session read with the application (SHA-256 of its token → the session, if live). */
  hosted?: { tokenHash: string; session: BrowserSession | undefined };
}
const requestScope = new AsyncLocalStorage<RequestScope>();

/** Runs one provider request in its own scope (see `RequestScope`). */
export const inRequestScope = <T>(run: () => Promise<T>): Promise<T> => requestScope.run({ reads: new Map() }, run);

/** `load()`, or what this request already read under `key`. */
function remembered<T>(key: string, load: () => Promise<T>): Promise<T> {
  const scope = requestScope.getStore();
  if (!scope) return load();
  // the map is keyed by read: what `key` stores is the Promise<T> stored under it below.
  let read = scope.reads.get(key) as Promise<T> | undefined;
  if (!read) {
    read = load();
    scope.reads.set(key, read);
  }
  return read;
}

/** Records what a statement returned beside what was asked, unless the request wrote since it was sent. */
function alsoRead(
  scope: RequestScope | undefined,
  reads: Map<string, Promise<unknown>> | undefined,
  key: string,
  value: unknown,
) {
  if (scope && scope.reads === reads) scope.reads.set(key, Promise.resolve(value));
}

/** Before a write: what the request read may no longer be so (but what `keep` names, which the write cannot change). */
function forgetReads(keep?: string) {
  const scope = requestScope.getStore();
  if (!scope) return;
  const kept = keep ? [...scope.reads].filter(([key]) => key.startsWith(keep)) : [];
  scope.reads = new Map(kept);
}

const ARTIFACT_COLUMNS = 'id, kind, application_id, grant_id, uid, account_id, client_id, payload, expires_at';
const ARTIFACT_CONFLICT = `on conflict (id) do update set payload = excluded.payload, expires_at = excluded.expires_at,
    uid = excluded.uid, account_id = excluded.account_id
  where oauth2_artifacts.application_id = excluded.application_id`;
const SPEND = `update oauth2_artifacts set consumed_at = now()
  where id = ? and kind = ? and application_id = ? and consumed_at is null and expires_at > now()
  returning id`;

/**
 * Writes the request's held-back rotation (see `RequestScope`): the refresh token spent and the tokens saved since, in
 * one statement. Throws `invalid_grant` when another request spent the token first; then nothing is saved.
 */
export async function writeRotation(): Promise<void> {
  const scope = requestScope.getStore();
  const rotation = scope?.rotation;
  if (!rotation) return;
  scope.rotation = undefined;
  const { em, applicationId, kind, spent, saves } = rotation;
  const rows = saves.length
    ? await preparedQuery(
        em,
        `oauth2_rotate_${saves.length}`,
        `with spent as (${SPEND})
          insert into oauth2_artifacts (${ARTIFACT_COLUMNS}, consumed_at, created_at)
            select v.id, v.kind, v.application_id::uuid, v.grant_id, v.uid, v.account_id, v.client_id, v.payload::jsonb,
                v.expires_at::timestamptz, null, now()
              from (values ${saves.map(() => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}) as v(${ARTIFACT_COLUMNS})
              where exists (select from spent)
          ${ARTIFACT_CONFLICT}
          returning id`,
        [spent, kind, applicationId, ...saves.flat()],
      )
    : await preparedQuery(em, 'oauth2_artifact_consume', SPEND, [spent, kind, applicationId]);
  if (!rows[0])
    throw new (oidcProvider().errors.InvalidGrant)(`${kind === 'RefreshToken' ? 'refresh token' : 'grant'} already used`);
}

/** The user columns the provider's `findAccount` reads. */
export interface AccountRow {
  id: string;
  primary_email: string | null;
  email_verified: boolean;
  profile: Record<string, unknown>;
  /** A string when read with the application (`row_to_json`, see `applicationWithReads`). */
  updated_at: Date | string;
}

/**
 * An active user of the application, as the provider's account (a banned, merged or deleted user has none): read
 * with the artifact that names it when the request read one, else by itself.
 */
export function findAccountRow(services: Services, applicationId: string, id: string): Promise<AccountRow | undefined> {
  if (!isUuid(id)) return Promise.resolve(undefined);
  return remembered(`account:${id}`, async () => {
    const [row] = await preparedQuery<AccountRow>(
      services.orm.em,
      'oauth2_account',
      `select id, primary_email, email_verified, profile, updated_at from users
          where id = ? and application_id = ? and status = 'active'`,
      [id, applicationId],
    );
    return row;
  });
}

/**
 * Any artifact by its hashed id (ids are random, so at most one row of any kind), with its grant as `Grant.find` sees
 * it and its user as `findAccountRow` does, and for a code the provider session it is bound to as `findByUid` sees it
 * (the code exchange checks that binding next). A code or refresh token spent within the last REPLAY_GRACE is shown
 * unspent (see `find`).
 */
const ARTIFACT_FIND = `select a.kind, a.payload, a.consumed_at, a.consumed_at < now() - interval '${REPLAY_GRACE}' as replayed,
    a.grant_id, g.payload as grant_payload, a.account_id,
    u.id as user_id, u.primary_email, u.email_verified, u.profile, u.updated_at,
    a.payload->>'sessionUid' as session_uid, s.payload as session_payload
  from oauth2_artifacts a
  left join oauth2_grants g on g.id = a.grant_id and g.application_id = a.application_id and g.expires_at > now()
  left join users u on u.id = (case when a.account_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
      then a.account_id::uuid end)
    and u.application_id = a.application_id and u.status = 'active'
  left join lateral (select payload from oauth2_artifacts
      where a.kind = 'AuthorizationCode' and uid = a.payload->>'sessionUid' and kind = 'Session'
        and application_id = a.application_id and expires_at > now() limit 1) s on true
  where a.id = ? and a.application_id = ? and a.expires_at > now()`;

type ArtifactRow = Omit<AccountRow, 'id'> & {
  kind: string;
  payload: Payload;
  consumed_at: Date | string | null;
  replayed: boolean | null;
  grant_id: string | null;
  grant_payload: Payload | null;
  account_id: string | null;
  user_id: string | null;
  session_uid?: string | null;
  session_payload?: Payload | null;
};

/** Records the grant and the user an artifact row was read with (see `ARTIFACT_FIND`). */
function alsoReadWith(scope: RequestScope | undefined, reads: Map<string, Promise<unknown>> | undefined, found?: ArtifactRow) {
  if (found?.grant_id) alsoRead(scope, reads, `grant:${found.grant_id}`, found.grant_payload ?? undefined);
  if (found?.account_id && isUuid(found.account_id)) {
    const { user_id, primary_email, email_verified, profile, updated_at } = found;
    const account = user_id ? { id: user_id, primary_email, email_verified, profile, updated_at } : undefined;
    alsoRead(scope, reads, `account:${found.account_id}`, account);
  }
  if (found?.kind === 'AuthorizationCode' && found.session_uid) {
    alsoRead(scope, reads, `uid:Session:${found.session_uid}`, found.session_payload ?? undefined);
  }
}

/**
 * The hosted browser session as `findBrowserSession` judges it, for `applicationWithReads`: the idle timeout is the
 * application's (`settings.session.idle_timeout_s`, its default when the stored settings leave it out), and only an
 * application without a `login_url` of its own (a hosted one) reads or touches it.
 */
const DEFAULT_IDLE_TIMEOUT_S = ApplicationSettingsSchema.parse({}).session.idle_timeout_s;
const HOSTED_SESSION_CTES = browserSessionCtes(
  `coalesce((select (a.settings #>> '{session,idle_timeout_s}')::int from applications a where a.id = s.application_id),
      ${DEFAULT_IDLE_TIMEOUT_S})`,
  `exists (select from applications a where a.id = s.application_id and a.settings #>> '{oauth2,login_url}' is null)`,
);

/**
 * The hosted browser session this request read with the application for the token whose SHA-256 is `tokenHash`:
 * `{session}` (undefined when not live), or undefined when the statement did not read it.
 */
export function hostedSessionRead(tokenHash: string): { session: BrowserSession | undefined } | undefined {
  const hosted = requestScope.getStore()?.hosted;
  return hosted?.tokenHash === tokenHash ? hosted : undefined;
}

/** The client metadata the provider reads, from a row of `oauth2_clients`. */
interface ClientRow {
  id: string;
  name: string;
  type: string;
  redirect_uris: string[];
  post_logout_redirect_uris: string[] | null;
  scopes: string[];
  logo_url: string | null;
  secret_hash: string | null;
}

const CLIENT_COLUMNS = 'id, name, type, redirect_uris, post_logout_redirect_uris, scopes, logo_url, secret_hash';

/**
 * The application, with what the request will ask for next as the provider reads it (see `RequestScope`), in one
 * statement: the client a request names in its `Basic` Authorization header (a confidential client at the token,
 * introspection and revocation endpoints; `Client.find`) or, without one, `named` (the authorization request's
 * `client_id`), and the artifact of the code or token it presents (or the provider session its cookie names), with its
 * grant and user (`find`); and for an authorization request, the hosted browser session its `gh_session_<id>` cookie
 * names (`browserToken`), judged and touched as `findBrowserSession` does (`browserSessionCtes`, with the application's
 * idle timeout read in the statement), when the application has no `login_url` (only then does the provider consult
 * it). Without any of them, or outside a request scope, the application alone.
 */
export async function applicationWithReads(
  em: EntityManager,
  applicationId: string,
  authorization: string | undefined,
  presented: string | undefined,
  named?: string,
  browserToken?: string,
): Promise<Application | undefined> {
  const scope = requestScope.getStore();
  const basicId = authorization?.startsWith('Basic ')
    ? Buffer.from(authorization.slice(6), 'base64').toString().split(':')[0]
    : named;
  const clientId = basicId && isUuid(basicId) ? basicId : undefined;
  const artifactId = presented && presented.length <= 512 ? sha256(presented) : undefined;
  if (!scope || (!clientId && !artifactId && !browserToken) || !isUuid(applicationId)) return applicationById(em, applicationId);
  // An authorization request's provider session names its grant for the client: read that too (`loadExistingGrant`).
  const sessionClient = named && clientId === named ? clientId : null;
  const tokenHash = browserToken ? sha256(browserToken) : undefined;
  const [row] = await preparedQuery<
    Record<string, unknown> & {
      client: ClientRow | null;
      artifact: ArtifactRow | null;
      session_grant: { id: string; payload: Payload } | null;
      hosted?: BrowserSessionRow | null;
    }
  >(
    em,
    tokenHash ? 'oauth2_application_reads_hosted' : 'oauth2_application_reads',
    `${tokenHash ? `with ${HOSTED_SESSION_CTES}` : ''}
      select app.*,${tokenHash ? ' (select row_to_json(h) from (select id, user_id, aal, amr, created_at, organization_id, host_id from found) h) as hosted,' : ''}
        (select row_to_json(c) from (select ${CLIENT_COLUMNS} from oauth2_clients
          where id = ? and application_id = app.id) c) as client,
        (select row_to_json(f) from (${ARTIFACT_FIND}) f) as artifact,
        (select row_to_json(sg) from (select id, payload from oauth2_grants
          where id = (select payload->'authorizations'->(?::text)->>'grantId' from oauth2_artifacts
                       where id = ? and application_id = app.id and kind = 'Session' and expires_at > now())
            and application_id = app.id and expires_at > now()) sg) as session_grant
      from applications app where app.id = ?`,
    [
      ...(tokenHash ? [applicationId, tokenHash] : []),
      clientId ?? null,
      artifactId ?? null,
      applicationId,
      sessionClient,
      artifactId ?? null,
      applicationId,
    ],
  );
  if (!row) return undefined;
  if (tokenHash) scope.hosted = { tokenHash, session: row.hosted ? browserSessionOfRow(row.hosted) : undefined };
  if (clientId) scope.reads.set(`client:${clientId}`, Promise.resolve(row.client ?? undefined));
  if (artifactId) {
    scope.reads.set(`artifact:${artifactId}`, Promise.resolve(row.artifact ?? undefined));
    alsoReadWith(scope, scope.reads, row.artifact ?? undefined);
  }
  if (row.session_grant) scope.reads.set(`grant:${row.session_grant.id}`, Promise.resolve(row.session_grant.payload));
  return applicationFromRow(row);
}

/**
 * A provider session is saved at the end of every request that uses it, with its expiry slid forward; one that has not
 * changed since this request read it is not written again while its stored expiry is within SESSION_SLIDE of the new
 * one (a returning browser's authorization request then writes only its code). The session still slides, by the day.
 */
const SESSION_SLIDE_MS = 86_400_000;
/** JSON with object keys sorted at every level (jsonb keeps its own key order), `undefined` members left out. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const members = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${members.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};
const withoutTimes = ({ iat: _iat, exp: _exp, ...rest }: Payload) => canonical(rest);

function rememberSession(hashed: string, row: ArtifactRow & { expires_at?: Date | string }) {
  const scope = requestScope.getStore();
  if (!scope || !row.payload) return;
  // `exp` is the stored payload's expiry in seconds (oidc-provider's BaseModel); the row's own column is not read.
  const exp = typeof row.payload.exp === 'number' ? row.payload.exp * 1000 : 0;
  scope.sessions ??= new Map();
  scope.sessions.set(hashed, { payload: row.payload, expiresAt: exp });
}

function unchangedSession(hashed: string, payload: Payload, expiresAt: Date): boolean {
  const read = requestScope.getStore()?.sessions?.get(hashed);
  if (!read || read.expiresAt < expiresAt.getTime() - SESSION_SLIDE_MS) return false;
  return withoutTimes(read.payload) === withoutTimes(payload);
}

/**
 * Native apps (RFC 8252): a loopback `http` redirect or a private-use URI scheme. A redirect to the service's own
 * origin is the service's own web page (the console's), even on `http` (a development base URL).
 */
const isNativeRedirect = (uri: string, ownOrigin: string): boolean => {
  const url = new URL(uri);
  return url.protocol !== 'https:' && url.origin !== ownOrigin;
};

function clientMetadata(row: ClientRow, ownOrigin: string): Record<string, unknown> {
  const confidential = row.type === 'confidential';
  return {
    client_id: row.id,
    client_name: row.name,
    redirect_uris: row.redirect_uris,
    post_logout_redirect_uris: row.post_logout_redirect_uris ?? [],
    response_types: ['code'],
    grant_types: confidential
      ? ['authorization_code', 'refresh_token', 'client_credentials']
      : ['authorization_code', 'refresh_token'],
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
    // The SHA-256 of the secret: `compareClientSecret` hashes what the client presents (see oauth2.provider.ts).
    ...(confidential && row.secret_hash ? { client_secret: row.secret_hash } : {}),
    // No scopes listed (a self-registered client that named none): any scope the application offers.
    ...(row.scopes.length ? { scope: row.scopes.join(' ') } : {}),
    application_type: row.redirect_uris.some((uri) => isNativeRedirect(uri, ownOrigin)) ? 'native' : 'web',
    ...(row.logo_url ? { logo_uri: row.logo_url } : {}),
    id_token_signed_response_alg: 'EdDSA',
  };
}

/** The scopes a grant record carries: its OpenID scopes and every resource's, once each. */
function grantScopes(payload: Payload): string[] {
  const all = new Set<string>();
  // oidc-provider types a stored payload's fields loosely; a Grant's are these shapes.
  const openid = payload.openid as { scope?: string } | undefined;
  for (const s of openid?.scope?.split(' ') ?? []) if (s) all.add(s);
  // likewise a Grant's resources: scopes by resource indicator
  for (const scope of Object.values((payload.resources as Record<string, string> | undefined) ?? {}))
    for (const s of scope.split(' ')) if (s) all.add(s);
  return [...all];
}

/**
 * oidc-provider's storage adapter on the service's database, for one application: every statement is scoped to it,
 * so one application's codes, tokens, grants and clients are invisible to another's provider. Any process serves any
 * request: nothing lives in memory.
 */
export function adapterFor(services: Services, applicationId: string) {
  // Plain statements need no identity map: the root manager's connection, no fork per statement.
  const em = services.orm.em;
  const fork = (): EntityManager => services.orm.em.fork();

  return class MikroOrmAdapter {
    readonly name: string;

    constructor(name: string) {
      this.name = name;
    }

    async upsert(id: string, payload: Payload, expiresIn: number): Promise<void> {
      const expiresAt = new Date(Date.now() + (expiresIn > 0 ? expiresIn : 1) * 1000);
      const row = () => [
        sha256(id),
        this.name,
        applicationId,
        GRANT_BOUND.has(this.name) ? (payload.grantId ?? null) : null,
        payload.uid ?? null,
        payload.accountId ?? null,
        payload.clientId ?? null,
        JSON.stringify(payload),
        expiresAt,
      ];
      const rotation = requestScope.getStore()?.rotation;
      // The tokens a refresh issues go with the spending of its refresh token (see `RequestScope`).
      if (rotation && GRANT_BOUND.has(this.name)) return void rotation.saves.push(row());
      if (this.name === 'Session' && unchangedSession(sha256(id), payload, expiresAt)) return;
      await writeRotation();
      forgetReads();
      if (this.name === 'Grant') return upsertGrant(fork(), applicationId, id, payload, expiresAt);
      if (this.name === 'Client') return upsertClient(fork(), applicationId, id, payload);
      await preparedQuery(
        em,
        'oauth2_artifact_upsert',
        `insert into oauth2_artifacts (${ARTIFACT_COLUMNS}, consumed_at, created_at)
          values (?, ?, ?, ?, ?, ?, ?, ?, ?, null, now())
          ${ARTIFACT_CONFLICT}`,
        row(),
      );
    }

    async find(id: string): Promise<Payload | undefined> {
      if (typeof id !== 'string' || id.length === 0 || id.length > 512) return undefined;
      await writeRotation();
      if (this.name === 'Grant') {
        return remembered(`grant:${id}`, async () => {
          const [row] = await preparedQuery<{ payload: Payload }>(
            em,
            'oauth2_grant_find',
            'select payload from oauth2_grants where id = ? and application_id = ? and expires_at > now()',
            [id, applicationId],
          );
          return row?.payload;
        });
      }
      if (this.name === 'Client') {
        if (!isUuid(id)) return undefined;
        const row = await remembered(`client:${id}`, async () => {
          const [found] = await preparedQuery<ClientRow>(
            em,
            'oauth2_client_find',
            `select ${CLIENT_COLUMNS} from oauth2_clients where id = ? and application_id = ?`,
            [id, applicationId],
          );
          return found;
        });
        return row ? clientMetadata(row, new URL(services.baseUrl).origin) : undefined;
      }
      // Expiry by the database clock (SECURITY 4): an expired artifact is not found. A code or refresh token spent
      // within the last REPLAY_GRACE is shown unspent: a request racing the one that spent it then loses when its own
      // spending is written (`consume`, or a refresh's rotation: refused, nothing revoked). Shown spent, the provider would take the racer for a replay and revoke the grant,
      // tokens of the winning exchange included. A replay after the grace is a replay: the grant is revoked.
      // Introspection asks for the same id as three kinds at once: one statement answers them all.
      const hashed = sha256(id);
      const row = await remembered(`artifact:${hashed}`, async () => {
        const scope = requestScope.getStore();
        const reads = scope?.reads;
        const [found] = await preparedQuery<ArtifactRow>(em, 'oauth2_artifact_find', ARTIFACT_FIND, [hashed, applicationId]);
        alsoReadWith(scope, reads, found);
        return found;
      });
      if (!row || row.kind !== this.name) return undefined;
      if (this.name === 'Session') rememberSession(hashed, row);
      return row.consumed_at && row.replayed
        ? { ...row.payload, consumed: Math.floor(new Date(row.consumed_at).getTime() / 1000) }
        : row.payload;
    }

    async findByUid(uid: string): Promise<Payload | undefined> {
      await writeRotation();
      return remembered(`uid:${this.name}:${uid}`, async () => {
        const [row] = await preparedQuery<{ payload: Payload }>(
          em,
          'oauth2_artifact_by_uid',
          'select payload from oauth2_artifacts where uid = ? and kind = ? and application_id = ? and expires_at > now()',
          [uid, this.name, applicationId],
        );
        return row?.payload;
      });
    }

    async findByUserCode(): Promise<undefined> {
      return undefined;
    }

    /**
     * Spends a code or a refresh token with one conditional update (SECURITY 3): of twenty concurrent exchanges, on
     * any number of processes, exactly one gets the row and the others are refused. A replay after the fact finds the
     * artifact consumed, and the provider then revokes the whole grant (RFC 9700 §4.14: it may have been stolen).
     */
    async consume(id: string): Promise<void> {
      await writeRotation();
      // Spending a code changes no user: the account read with it stands (the provider asks for it next).
      forgetReads(this.name === 'AuthorizationCode' ? 'account:' : undefined);
      const scope = requestScope.getStore();
      if (scope && (this.name === 'RefreshToken' || this.name === 'AuthorizationCode')) {
        scope.rotation = { em, applicationId, kind: this.name, spent: sha256(id), saves: [] };
        return;
      }
      const rows = await preparedQuery<{ id: string }>(em, 'oauth2_artifact_consume', SPEND, [
        sha256(id),
        this.name,
        applicationId,
      ]);
      if (!rows[0])
        throw new (oidcProvider().errors.InvalidGrant)(
          `${this.name === 'RefreshToken' ? 'refresh token' : 'grant'} already used`,
        );
    }

    async destroy(id: string): Promise<void> {
      await writeRotation();
      forgetReads();
      if (this.name === 'Grant') return void (await revokeGrant(fork(), applicationId, id, 'revoked'));
      if (this.name === 'Client') {
        await em.execute('delete from oauth2_clients where id = ? and application_id = ? and dynamic', [id, applicationId]);
        return;
      }
      await em.execute('delete from oauth2_artifacts where id = ? and application_id = ?', [sha256(id), applicationId]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      await writeRotation();
      forgetReads();
      await em.execute('delete from oauth2_artifacts where grant_id = ? and kind = ? and application_id = ?', [
        grantId,
        this.name,
        applicationId,
      ]);
    }
  };
}

async function upsertGrant(em: EntityManager, applicationId: string, id: string, payload: Payload, expiresAt: Date) {
  if (!isUuid(payload.accountId ?? '') || !isUuid(payload.clientId ?? '')) throw new Error('grant without user or client');
  const scopes = JSON.stringify(grantScopes(payload));
  await em.transactional(async (tx) => {
    const [row] = await tx.execute<Array<{ inserted: boolean; user_id: string; client_id: string }>>(
      `insert into oauth2_grants (id, application_id, user_id, client_id, scopes, payload, expires_at, created_at, updated_at)
        values (?, ?, ?, ?, ?, ?, ?, now(), now())
        on conflict (id) do update set scopes = excluded.scopes, payload = excluded.payload, expires_at = excluded.expires_at,
          updated_at = now()
        where oauth2_grants.application_id = excluded.application_id
        returning (xmax = 0) as inserted, user_id, client_id`,
      [id, applicationId, payload.accountId, payload.clientId, scopes, JSON.stringify(payload), expiresAt],
    );
    if (row?.inserted) {
      await tx.execute(`insert into events (${EVENT_COLUMNS}) values ${EVENT_VALUES}`, [
        ...eventRow(applicationId, 'oauth2_grant.created', {
          id,
          user_id: row.user_id,
          client_id: row.client_id,
          scopes: JSON.parse(scopes),
        }),
      ]);
    }
  });
}

/** A dynamically registered client (RFC 7591): public, PKCE, marked `dynamic`. */
async function upsertClient(em: EntityManager, applicationId: string, id: string, payload: Payload) {
  // oidc-provider validated the client metadata before it stores it: redirect_uris is a string array.
  const redirectUris = (payload.redirect_uris as string[] | undefined) ?? [];
  // The same (RFC 8414 / RP-Initiated Logout registration metadata, validated as URIs).
  const logoutUris = (payload.post_logout_redirect_uris as string[] | undefined) ?? [];
  const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [];
  await em.execute(
    `insert into oauth2_clients (id, application_id, name, type, redirect_uris, post_logout_redirect_uris, scopes, logo_url,
                                 secret_hash, dynamic, created_at, updated_at)
      values (?, ?, ?, 'public', ?, ?, ?, ?, null, true, now(), now())
      on conflict (id) do nothing`,
    [
      id,
      applicationId,
      String(payload.client_name ?? 'Unnamed client').slice(0, 200),
      JSON.stringify(redirectUris),
      JSON.stringify(logoutUris),
      JSON.stringify(scopes),
      typeof payload.logo_uri === 'string' ? payload.logo_uri.slice(0, 2048) : null,
    ],
  );
}

/**
 * Deletes a grant and, by the foreign key, every code and token issued under it; records `oauth2_grant.revoked`.
 * Answers whether there was one to delete.
 */
export async function revokeGrant(em: EntityManager, applicationId: string, grantId: string, reason: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const rows = await tx.execute<Array<{ user_id: string; client_id: string }>>(
      'delete from oauth2_grants where id = ? and application_id = ? returning user_id, client_id',
      [grantId, applicationId],
    );
    if (!rows[0]) return false;
    await tx.execute(`insert into events (${EVENT_COLUMNS}) values ${EVENT_VALUES}`, [
      ...eventRow(applicationId, 'oauth2_grant.revoked', {
        id: grantId,
        user_id: rows[0].user_id,
        client_id: rows[0].client_id,
        reason,
      }),
    ]);
    return true;
  });
}
