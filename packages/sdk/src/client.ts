import type { AppRouter } from '@gatehouse/api';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { decodeJwt } from 'jose';
import { GatehouseError } from './errors.ts';
import { createTransport, type ProcedurePath } from './transport.ts';

type AuthInputs = inferRouterInputs<AppRouter>['auth'];
type AuthOutputs = inferRouterOutputs<AppRouter>['auth'];

/** The outcome of every first factor (CONTRACT §4): `consent_required`, `mfa_required` or `complete`. */
export type SignInResult = AuthOutputs['magicLink']['verify'];
export type Tokens = AuthOutputs['token']['refresh'];
export type MagicLinkStarted = AuthOutputs['magicLink']['start'];
/** One of the signed-in user's sessions, as `sessions.list()` answers it. */
export type UserSession = AuthOutputs['sessions']['list'][number];
export type CurrentUser = AuthOutputs['me']['get'];
export type StartMagicLinkInput = AuthInputs['magicLink']['start'];
export type VerifyMagicLinkInput = AuthInputs['magicLink']['verify'];
export type AcceptConsentInput = AuthInputs['consent']['accept'];
export type UpdateMeInput = AuthInputs['me']['update'];

/** Where the refresh token lives between page loads. Both methods are synchronous (e.g. over `localStorage`). */
export interface TokenStorage {
  get(): string | null;
  set(value: string | null): void;
}

/** What the client knows about the session it holds, from the access token it was last given. */
export interface ClientSession {
  user_id: string;
  session_id: string;
  aal: number;
  /** The active organization (`org` claim) and the user's role in it, null when none is active. */
  org: string | null;
  org_role: string | null;
  /** When the current access token expires, in milliseconds since the epoch by this client's clock (`now`). */
  access_token_expires_at: number;
}

export interface GatehouseClientOptions {
  /** Where the service runs, e.g. `https://auth.example.com`. */
  baseUrl: string;
  /** The publishable application id (sent as `x-application-id`). */
  applicationId: string;
  /**
   * Keeps the refresh token across page loads. Default: memory only, so a reload signs the person out. The access
   * token is always held in memory only.
   */
  storage?: TokenStorage;
  fetch?: typeof fetch;
  /** Called with the session whenever the client's tokens change (sign-in, refresh, organization switch) and with
   * null when it loses them (sign-out, a refused refresh). */
  onSessionChange?: (session: ClientSession | null) => void;
  /** The clock, in milliseconds since the epoch (default `Date.now`); tests move it to make a token look old. */
  now?: () => number;
  /**
   * Runs a token rotation exclusively across every client sharing `storage` (e.g. browser tabs over one
   * `localStorage`): `(run) => navigator.locks.request('gatehouse-refresh', run)`. Within one client, rotations are
   * always serialized; without a shared lock two tabs refreshing at once present the same refresh token twice, which
   * the server treats as theft and answers by revoking the session.
   */
  lock?: <T>(run: () => Promise<T>) => Promise<T>;
}

export interface GatehouseBrowserClient {
  magicLink: {
    /** Emails a sign-in link. The answer is the same whether or not the address is known. */
    start(input: StartMagicLinkInput): Promise<MagicLinkStarted>;
    /** Exchanges the link's `token`; when the result is `complete`, the client keeps its tokens. */
    verify(input: VerifyMagicLinkInput): Promise<SignInResult>;
  };
  consent: {
    /** Accepts the listed documents with the pending token; when the result is `complete`, the client keeps its tokens. */
    accept(input: AcceptConsentInput): Promise<SignInResult>;
  };
  me(): Promise<CurrentUser>;
  updateMe(input: UpdateMeInput): Promise<CurrentUser>;
  /** Ends the session on the server and forgets the tokens (locally even when the server cannot be reached). */
  signOut(): Promise<void>;
  sessions: {
    list(): Promise<UserSession[]>;
    /** Revokes one of the user's sessions; revoking the current one signs this client out. */
    revoke(id: string): Promise<{ id: string; deleted: true }>;
  };
  /** Makes an organization the session's active one (`null`: none); the new access token carries `org`/`org_role`. */
  switchOrganization(organizationId: string | null): Promise<ClientSession>;
  /**
   * A valid access token for your own API calls (`Authorization: Bearer …`), refreshed first when it expires within
   * 60 s (half its lifetime for tokens shorter than 2 min); null when signed out.
   */
  getAccessToken(): Promise<string | null>;
  /** The session as of the last token the client received; null when signed out or not yet restored from `storage`. */
  getSession(): ClientSession | null;
}

const REFRESH_MARGIN_MS = 60_000;

const notSignedIn = () => new GatehouseError('missing_credentials', 401, 'Not signed in');
const isInvalidToken = (error: unknown) => error instanceof GatehouseError && error.code === 'invalid_token';
/** The session is over (or there never was one): what sign-out and `getAccessToken` treat as "signed out". */
const isSignedOut = (error: unknown) =>
  error instanceof GatehouseError && (error.code === 'invalid_token' || error.code === 'missing_credentials');

interface HeldAccess {
  token: string;
  expiresAt: number;
  lifetimeMs: number;
  session: ClientSession;
}

/**
 * The end-user client for browsers (and any app acting for one person): the sign-in steps, the current user, their
 * sessions, and the tokens — kept by the client and refreshed before they expire. Every call goes over tRPC `/trpc`
 * with `x-application-id`; failures reject with a `GatehouseError`.
 *
 * Refresh tokens are single use and the server revokes the whole session when one is presented twice, so every
 * rotation (refresh, organization switch) runs one at a time, and concurrent calls that need a refresh share one.
 */
export function createGatehouseClient(options: GatehouseClientOptions): GatehouseBrowserClient {
  const now = options.now ?? Date.now;
  const call = createTransport({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    headers: (token) => ({ 'x-application-id': options.applicationId, ...(token ? { authorization: `Bearer ${token}` } : {}) }),
  });

  let memoryRefreshToken: string | null = null;
  let access: HeldAccess | null = null;
  // Bumped whenever the held session is replaced or dropped: an answer to a rotation started before is discarded.
  let generation = 0;
  let queue: Promise<unknown> = Promise.resolve();
  let refreshing: Promise<void> | null = null;

  const readRefreshToken = () => (options.storage ? options.storage.get() : memoryRefreshToken);
  const writeRefreshToken = (value: string | null) => {
    if (options.storage) options.storage.set(value);
    else memoryRefreshToken = value;
  };

  const notify = (session: ClientSession | null) => {
    try {
      options.onSessionChange?.(session);
    } catch (error) {
      // A failing listener must not undo a token rotation the server has already made.
      queueMicrotask(() => {
        throw error;
      });
    }
  };

  const keep = (tokens: Tokens) => {
    const claims = decodeJwt(tokens.access_token);
    const lifetimeMs = tokens.expires_in * 1000;
    // Expiry by the server's `expires_in` from the moment of receipt, so a skewed device clock does not matter.
    const expiresAt = now() + lifetimeMs;
    const session: ClientSession = {
      user_id: String(claims.sub),
      session_id: tokens.session_id,
      aal: tokens.aal,
      org: typeof claims.org === 'string' ? claims.org : null,
      org_role: typeof claims.org_role === 'string' ? claims.org_role : null,
      access_token_expires_at: expiresAt,
    };
    access = { token: tokens.access_token, expiresAt, lifetimeMs, session };
    writeRefreshToken(tokens.refresh_token);
    notify(session);
    return session;
  };

  const clear = () => {
    const had = access !== null || readRefreshToken() !== null;
    generation++;
    access = null;
    writeRefreshToken(null);
    if (had) notify(null);
  };

  const signedIn = (result: SignInResult): SignInResult => {
    if (result.status === 'complete') {
      generation++;
      keep(result.tokens);
    }
    return result;
  };

  // A 60-second token (the shortest allowed) would otherwise always be "about to expire" and refresh on every call.
  const needsRefresh = () => !access || access.expiresAt - now() <= Math.min(REFRESH_MARGIN_MS, access.lifetimeMs / 2);

  /** Runs token rotations one after another (and under the app's cross-tab lock, when it gives one). */
  const exclusive = <T>(run: () => Promise<T>): Promise<T> => {
    const result = queue.then(() => (options.lock ? options.lock(run) : run()));
    queue = result.catch(() => undefined);
    return result;
  };

  /**
   * Rotates the refresh token; only inside `exclusive`. `stale` is the access token the caller found wanting: if the
   * held one has been replaced meanwhile and is fresh, nothing is done.
   */
  const refreshLocked = async (stale?: string): Promise<void> => {
    if (access && access.token !== stale && !needsRefresh()) return;
    const refreshToken = readRefreshToken();
    if (!refreshToken) {
      // The shared storage was emptied (signed out in another tab): so is this client.
      if (access) clear();
      throw notSignedIn();
    }
    const started = generation;
    let tokens: Tokens;
    try {
      tokens = await call<Tokens>('auth.token.refresh', { refresh_token: refreshToken });
    } catch (error) {
      // Expired, revoked or already used: the session is over. Unless a new one replaced it meanwhile.
      if (isInvalidToken(error) && generation === started && readRefreshToken() === refreshToken) clear();
      throw error;
    }
    if (generation === started) keep(tokens);
  };

  /** Refreshes once for every caller that asks while a refresh is under way. */
  const refresh = (stale?: string): Promise<void> => {
    refreshing ??= exclusive(() => refreshLocked(stale)).finally(() => {
      refreshing = null;
    });
    return refreshing;
  };

  const heldToken = () => {
    if (!access) throw notSignedIn();
    return access.token;
  };

  /** A signed-in call: refreshes first when needed, and once more (then retries once) if the server refuses the token. */
  const authed = async <T>(path: ProcedurePath, input: unknown, locked = false): Promise<T> => {
    const renew = locked ? refreshLocked : refresh;
    if (!access && !readRefreshToken()) throw notSignedIn();
    if (needsRefresh()) await renew();
    const token = heldToken();
    try {
      return await call<T>(path, input, token);
    } catch (error) {
      // Refused before the procedure ran (a skewed clock, a revoked session): nothing happened, so one retry is safe.
      // A revoked session fails the refresh too, which signs the client out.
      if (!isInvalidToken(error)) throw error;
      await renew(token);
      return call<T>(path, input, heldToken());
    }
  };

  return {
    magicLink: {
      start: (input) => call<MagicLinkStarted>('auth.magicLink.start', input),
      verify: async (input) => signedIn(await call<SignInResult>('auth.magicLink.verify', input)),
    },
    consent: {
      accept: async (input) => signedIn(await call<SignInResult>('auth.consent.accept', input)),
    },
    me: () => authed<CurrentUser>('auth.me.get', undefined),
    updateMe: (input) => authed<CurrentUser>('auth.me.update', input),
    async signOut() {
      if (!access && !readRefreshToken()) return;
      try {
        await authed('auth.signOut', undefined);
      } catch (error) {
        // Already ended on the server: signed out all the same. Otherwise (offline) the tokens go anyway, and the
        // app hears why the server may still hold the session.
        if (!isSignedOut(error)) {
          clear();
          throw error;
        }
      }
      clear();
    },
    sessions: {
      list: () => authed<UserSession[]>('auth.sessions.list', undefined),
      async revoke(id) {
        const result = await authed<{ id: string; deleted: true }>('auth.sessions.revoke', { id });
        if (access?.session.session_id === id) clear();
        return result;
      },
    },
    // The server rotates the refresh token here too, so this is a rotation like a refresh: exclusive.
    switchOrganization: (organizationId) =>
      exclusive(async () => {
        const started = generation;
        const tokens = await authed<Tokens>('auth.session.switchOrganization', { organization_id: organizationId }, true);
        if (generation !== started) throw notSignedIn();
        return keep(tokens);
      }),
    async getAccessToken() {
      if (!access && !readRefreshToken()) return null;
      if (needsRefresh()) {
        try {
          await refresh();
        } catch (error) {
          if (isSignedOut(error)) return null;
          throw error;
        }
      }
      return access?.token ?? null;
    },
    getSession: () => access?.session ?? null,
  };
}
