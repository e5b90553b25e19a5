import type { AppRouter } from '@gatehouse/api';
import type {
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  startAuthentication,
  startRegistration,
} from '@simplewebauthn/browser';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { decodeJwt } from 'jose';
import { GatehouseError } from './errors.ts';
import { createTransport, type ProcedurePath } from './transport.ts';

type AuthInputs = inferRouterInputs<AppRouter>['auth'];
type AuthOutputs = inferRouterOutputs<AppRouter>['auth'];

/** The outcome of every first factor (magic link, passkey, OAuth, SSO): `consent_required`, `mfa_required` or `complete`. */
export type SignInResult = AuthOutputs['magicLink']['verify'];
export type Tokens = AuthOutputs['token']['refresh'];
export type MagicLinkStarted = AuthOutputs['magicLink']['start'];
type MagicLinkPoll = AuthOutputs['magicLink']['poll'];
/**
 * What `magicLink.start()` ends with: the sign-in result, once the link was opened and confirmed on any device (the
 * hosted page), or `link_sent` when the link leads to your own redirect URL (that page calls `magicLink.verify`).
 */
export type MagicLinkOutcome = SignInResult | { status: 'link_sent'; verification_id: string };

export interface MagicLinkWaitOptions {
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal;
  /** How often to ask whether the link was confirmed (default 2000 ms). */
  pollIntervalMs?: number;
}
/** One of the signed-in user's sessions, as `sessions.list()` answers it. */
export type UserSession = AuthOutputs['sessions']['list'][number];
export type CurrentUser = AuthOutputs['me']['get'];
/** A passkey as its owner sees it (never its key material). */
export type Passkey = AuthOutputs['passkeys']['list'][number];
/** A second factor other than a passkey: an authenticator app (`totp`) or a set of backup codes (`backup_code`). */
export type MfaFactor = AuthOutputs['mfa']['factors']['list'][number];
/** The seed of a new authenticator app, shown once; it counts after `mfa.confirmTotp`. */
export type TotpEnrollment = AuthOutputs['mfa']['totp']['enroll'];
/** Ten one-time codes, shown once; a new set voids the previous one. */
export type BackupCodes = AuthOutputs['mfa']['backupCodes']['create'];
/** A step-up of the signed-in session (`mfa.stepUp`): `mfa_required` with its pending token, `session_id`, `expires_at`. */
export type StepUp = AuthOutputs['stepUp']['start'];
export type Deleted = AuthOutputs['sessions']['revoke'];
export type StartMagicLinkInput = AuthInputs['magicLink']['start'];
export type VerifyMagicLinkInput = AuthInputs['magicLink']['verify'];
export type AcceptConsentInput = AuthInputs['consent']['accept'];
export type StartSsoInput = AuthInputs['sso']['start'];
export type SsoStarted = AuthOutputs['sso']['start'];
export type UpdateMeInput = AuthInputs['me']['update'];
/** A provider of social sign-in (`google`, `github`, …, or `oidc`). */
export type OAuthProvider = AuthInputs['oauth']['start']['provider'];
/** A linked OAuth or SAML account of the signed-in user. */
export type LinkedIdentity = AuthOutputs['identities']['list'][number];

export interface OAuthRedirectOptions {
  /** Your page the browser comes back to (`?code=…&state=…&provider=…`); its origin must be an allowed origin. */
  redirectUri: string;
  /** Sends the browser to the provider (default `window.location.assign`). */
  navigate?: (url: string) => void;
  /** `oauth.signIn` only: the host the person signs in to (host access rules decide; the token carries it as `host`). */
  hostId?: string;
}

export interface OAuthCallbackOptions {
  /** The URL the browser came back to (default `window.location.href`). */
  url?: string;
}
export type RegisterPasskeyInput = Pick<AuthInputs['passkeys']['register']['finish'], 'name'>;
export type EnrollTotpInput = NonNullable<AuthInputs['mfa']['totp']['enroll']>;
export type ConfirmTotpInput = AuthInputs['mfa']['totp']['confirm'];
/** `GET /v1/authz/relations`: `namespace` restricts to one object namespace; `limit` 1–100 (default 25), `offset`. */
export type ListRelationsInput = NonNullable<inferRouterInputs<AppRouter>['authz']['relations']>;
/** A page of the signed-in user's relationship tuples, newest first: `{relations, total, limit, offset}`. */
export type RelationPage = inferRouterOutputs<AppRouter>['authz']['relations'];
/** What the user authorized a third-party app (an OAuth 2.0 client of the application) to do. */
export type Grant = AuthOutputs['me']['grants']['list'][number];
/** A third-party app's authorization request, as the application's sign-in page shows it. */
export type OAuth2Interaction = AuthOutputs['oauth2']['interaction'];
/** Where to send the browser to finish an authorization request. */
export type OAuth2InteractionOutcome = AuthOutputs['oauth2']['complete'];
/** What a pending invitation is for (`invitations.lookup`). */
export type InvitationPreview = AuthOutputs['invitations']['lookup'];
/** An accepted invitation: the organization, the role, the membership and the invitation's redirect URL. */
export type AcceptedInvitation = AuthOutputs['invitations']['accept'];
type AuthenticationCeremony = AuthOutputs['passkeys']['signIn']['start'];
type RegistrationCeremony = AuthOutputs['passkeys']['register']['start'];

/** The browser's half of the passkey ceremonies, with the signatures of @simplewebauthn/browser's functions. */
export interface WebAuthnCeremonies {
  startRegistration: typeof startRegistration;
  startAuthentication: typeof startAuthentication;
  /**
   * Cancels the ceremony in progress (its promise then rejects), so that a waiting autofill sign-in can be renewed
   * before its server state expires. Without it, an autofill sign-in is not renewed.
   */
  cancelCeremony?: () => void;
}

export interface PasskeySignInOptions {
  /** The host the person signs in to: host access rules decide, and the access token carries it as `host`. */
  hostId?: string;
  /**
   * Passkey autofill (WebAuthn conditional mediation): no dialog; the browser offers the person's passkeys in the
   * autofill of an `<input autocomplete="username webauthn">` on the page, and the promise settles when one is picked.
   * Start it as the sign-in page loads (check `browserSupportsWebAuthnAutofill()` of @simplewebauthn/browser first).
   * It may wait for as long as the page is open: the client renews the request before its server state expires. A
   * passkey ceremony started meanwhile (a "Sign in with a passkey" button) replaces it, and this promise rejects with
   * @simplewebauthn/browser's `WebAuthnError` of code `ERROR_CEREMONY_ABORTED`.
   */
  autofill?: boolean;
}

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
  /** Per attempt, in milliseconds (default 30 000); a slower call fails with `timeout`. */
  timeoutMs?: number;
  /** Retries of reads after a network error, a timeout, 429 or a 5xx (default 2; 0 = none). */
  maxRetries?: number;
  /** Called with the session whenever the client's tokens change (sign-in, refresh, organization switch) and with
   * null when it loses them (sign-out, a refused refresh). */
  onSessionChange?: (session: ClientSession | null) => void;
  /** The clock, in milliseconds since the epoch (default `Date.now`); tests move it to make a token look old. */
  now?: () => number;
  /**
   * Runs a token rotation exclusively across every client sharing `storage` (e.g. browser tabs over one
   * `localStorage`): `(run) => navigator.locks.request('gatehouse-refresh', run)`. Within one client, rotations are
   * always serialized; without a shared lock two tabs refreshing at once present the same refresh token twice. The
   * server's grace (30 s by default) gives both the same new pair, but a tab that presents a token after the other has
   * used its successor, or after the grace, is treated as theft: the session is revoked. Keep the lock.
   */
  lock?: <T>(run: () => Promise<T>) => Promise<T>;
  /**
   * Creates and uses passkeys (`navigator.credentials.create()`/`get()`). Default: @simplewebauthn/browser's
   * `startRegistration`/`startAuthentication` and `WebAuthnAbortService.cancelCeremony`, loaded at the first passkey
   * ceremony (an optional peer dependency: install it to use passkeys in a browser); pass another implementation
   * where there is no browser WebAuthn (React Native, tests).
   */
  webauthn?: WebAuthnCeremonies;
}

export interface GatehouseBrowserClient {
  magicLink: {
    /**
     * Emails a sign-in link (the answer is the same whether or not the address is known). Without a redirect URL the
     * link opens Gatehouse's hosted page, on any device (a phone), and this promise waits until the person confirms
     * there, then resolves with the sign-in result for *this* client (tokens kept when `complete`; `mfa_required` and
     * `consent_required` continue here). With a redirect URL it resolves at once with `link_sent`: your page at that
     * URL calls `verify` with the link's `token`.
     */
    start(input: StartMagicLinkInput, options?: MagicLinkWaitOptions): Promise<MagicLinkOutcome>;
    /** Exchanges the link's `token`; when the result is `complete`, the client keeps its tokens. */
    verify(input: VerifyMagicLinkInput): Promise<SignInResult>;
  };
  /**
   * Enterprise SSO (SAML). `start` answers the IdP URL: send the browser there (`location.assign(redirect_url)`). The
   * IdP posts to Gatehouse, which sends the browser back to your `redirect_uri` with `?code=` (or `?error=`); that
   * page calls `complete` with the code (single use, 60 s).
   */
  sso: {
    start(input: StartSsoInput): Promise<SsoStarted>;
    /** Exchanges the ACS code; when the result is `complete`, the client keeps its tokens. */
    complete(input: { code: string }): Promise<SignInResult>;
  };
  /**
   * Social sign-in. `signIn` sends the browser to the provider; it comes back to your `redirectUri`, whose page calls
   * `handleCallback()`: it reads `code`, `state` and `provider` from the URL and answers the sign-in result (the
   * client keeps the tokens when `complete`). A person who declined at the provider rejects with
   * `invalid_verification`.
   */
  oauth: {
    signIn(provider: OAuthProvider, options: OAuthRedirectOptions): Promise<void>;
    handleCallback(options?: OAuthCallbackOptions): Promise<SignInResult>;
  };
  /** The signed-in user's linked accounts: add one (`link`, then `handleLinkCallback` on the redirect page), list, remove. */
  identities: {
    link(provider: OAuthProvider, options: OAuthRedirectOptions): Promise<void>;
    handleLinkCallback(options?: OAuthCallbackOptions): Promise<LinkedIdentity>;
    list(): Promise<LinkedIdentity[]>;
    /** Never the last way to sign in (`conflict`); needs aal 2 when the user has a second factor (`step_up_required`). */
    remove(id: string): Promise<Deleted>;
  };
  consent: {
    /** Accepts the listed documents with the pending token; when the result is `complete`, the client keeps its tokens. */
    accept(input: AcceptConsentInput): Promise<SignInResult>;
  };
  me(): Promise<CurrentUser>;
  updateMe(input: UpdateMeInput): Promise<CurrentUser>;
  /** The relationship tuples whose subject is the signed-in user (`user:<id>`), newest first. */
  relations(input?: ListRelationsInput): Promise<RelationPage>;
  /** Ends the session on the server and forgets the tokens (locally even when the server cannot be reached). */
  signOut(): Promise<void>;
  sessions: {
    list(): Promise<UserSession[]>;
    /** Revokes one of the user's sessions; revoking the current one signs this client out. */
    revoke(id: string): Promise<Deleted>;
  };
  /** The current session as the server sees it: `aal`, and `mfa_enrollment_required` (time to offer `mfa.enrollTotp`). */
  session(): Promise<UserSession>;
  /** The third-party apps (OAuth 2.0 clients) the user authorized; revoking one ends every token it holds at once. */
  grants: {
    list(): Promise<Grant[]>;
    revoke(id: string): Promise<Deleted>;
  };
  /**
   * For the application's own sign-in page when a third-party app asks to sign the user in (`?interaction=<uid>`):
   * what it asks for, then the signed-in user's answer. Send the browser to the answer's `redirect_to`.
   */
  oauth2: {
    interaction(uid: string): Promise<OAuth2Interaction>;
    complete(uid: string, approvedScopes: string[]): Promise<OAuth2InteractionOutcome>;
    deny(uid: string): Promise<OAuth2InteractionOutcome>;
  };
  /**
   * Passkeys. A ceremony the browser refuses (the person cancels, no matching passkey) rejects with
   * @simplewebauthn/browser's error, not a `GatehouseError`: nothing was sent to the server.
   */
  passkeys: {
    /** Signed in: creates a passkey on this device and registers it. Needs aal 2 once the user has a second factor. */
    register(input?: RegisterPasskeyInput): Promise<Passkey>;
    /**
     * Signs in with a passkey (a first factor at aal 2): the browser's passkey dialog, or with `autofill` its autofill.
     * When the result is `complete`, the client keeps its tokens.
     */
    signIn(options?: PasskeySignInOptions): Promise<SignInResult>;
    list(): Promise<Passkey[]>;
    /** Needs aal 2 (`step_up_required` otherwise). */
    remove(id: string): Promise<Deleted>;
  };
  /**
   * Second factors. A sign-in that answers `mfa_required` continues with one of `result.mfa.methods` and its pending
   * token; when the result is `complete`, the client keeps its tokens (at aal 2). Adding a factor, like adding a
   * passkey, needs aal 2 once the user has one (`step_up_required` otherwise).
   */
  mfa: {
    passkey(pendingToken: string): Promise<SignInResult>;
    totp(pendingToken: string, code: string): Promise<SignInResult>;
    backupCode(pendingToken: string, code: string): Promise<SignInResult>;
    /**
     * Signed in at aal 1: asks for a second factor that raises *this* session to aal 2 (a step-up, when a call answered
     * `step_up_required`). Continue with `passkey`, `totp` or `backupCode` and the answer's `pending_token`: their
     * `complete` result is this session at aal 2 (the client keeps its new tokens). 409 `no_second_factor` when the user
     * has none, 409 `conflict` at aal 2 already.
     */
    stepUp(): Promise<StepUp>;
    /** Signed in: starts enrolling an authenticator app; show `otpauth_uri` as a QR code, then `confirmTotp`. */
    enrollTotp(input?: EnrollTotpInput): Promise<TotpEnrollment>;
    /** Confirms an enrollment with the app's first code; from then on sign-ins ask for a second factor. */
    confirmTotp(input: ConfirmTotpInput): Promise<MfaFactor>;
    createBackupCodes(): Promise<BackupCodes>;
    factors: {
      list(): Promise<MfaFactor[]>;
      /** Needs aal 2 (`step_up_required` otherwise). */
      remove(id: string): Promise<Deleted>;
    };
  };
  /**
   * An invitation's token (from its mailed link): `lookup` shows what it is for without spending it; `accept` makes the
   * signed-in user a member (their verified email must be the invited address).
   */
  invitations: {
    lookup(token: string): Promise<InvitationPreview>;
    accept(token: string): Promise<AcceptedInvitation>;
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
/** A waiting autofill sign-in is started again this long before its server state (`options.timeout`) expires. */
const AUTOFILL_RENEW_MARGIN_MS = 30_000;

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

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** What the provider's redirect put on the URL of your page (through Gatehouse's relay). */
function oauthReturn(options: OAuthCallbackOptions | undefined) {
  const href = options?.url ?? (globalThis as { location?: { href: string } }).location?.href;
  if (!href) throw new GatehouseError('validation_failed', 422, 'No URL to read the OAuth redirect from: pass { url }');
  const params = new URL(href).searchParams;
  const provider = params.get('provider');
  const state = params.get('state');
  if (!provider || !state) {
    throw new GatehouseError('validation_failed', 422, 'This URL carries no OAuth redirect (provider and state are missing)');
  }
  checkState(state);
  const code = params.get('code');
  const error = params.get('error');
  return { provider, input: { state, ...(code ? { code } : {}), ...(error && !code ? { error } : {}) } };
}

/**
 * The state of the authorization this tab started, kept in `sessionStorage` where there is one: a redirect carrying
 * another state (an attacker's own code sent to the person's browser, "login CSRF", RFC 9700 §4.7) is refused before
 * anything is sent.
 */
const STATE_KEY = 'gatehouse.oauth.state';
const tabStorage = () => (globalThis as { sessionStorage?: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'> }).sessionStorage;
function rememberState(authorizationUrl: string) {
  const state = new URL(authorizationUrl).searchParams.get('state');
  if (state) tabStorage()?.setItem(STATE_KEY, state);
}
function checkState(state: string) {
  const storage = tabStorage();
  if (!storage) return;
  const expected = storage.getItem(STATE_KEY);
  storage.removeItem(STATE_KEY);
  if (expected !== state) {
    throw new GatehouseError('invalid_verification', 401, 'This sign-in was not started in this browser tab. Start again.');
  }
}

const navigateTo = (options: OAuthRedirectOptions) => (url: string) => {
  rememberState(url);
  if (options.navigate) return options.navigate(url);
  (globalThis as unknown as { location: { assign(url: string): void } }).location.assign(url);
};

type SimpleWebAuthn = typeof import('@simplewebauthn/browser');

/**
 * @simplewebauthn/browser's ceremonies, loaded at the first one: a server that never runs a passkey ceremony (or
 * passes its own `webauthn`) neither loads nor installs the package.
 */
function browserCeremonies(): WebAuthnCeremonies {
  let loaded: SimpleWebAuthn | undefined;
  const load = async (): Promise<SimpleWebAuthn> => {
    try {
      loaded ??= await import('@simplewebauthn/browser');
    } catch (error) {
      throw new Error(
        'Passkeys in the browser need @simplewebauthn/browser: npm install @simplewebauthn/browser ' +
          '(or pass your own `webauthn` to createGatehouseClient)',
        { cause: error },
      );
    }
    return loaded;
  };
  return {
    startRegistration: async (options) => (await load()).startRegistration(options),
    startAuthentication: async (options) => (await load()).startAuthentication(options),
    // Nothing was loaded, so no ceremony is in progress: synchronous, so it cannot cancel the ceremony started next.
    cancelCeremony: () => loaded?.WebAuthnAbortService.cancelCeremony(),
  };
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
  const webauthn: WebAuthnCeremonies = options.webauthn ?? browserCeremonies();
  const call = createTransport({
    baseUrl: options.baseUrl,
    fetch: options.fetch,
    timeoutMs: options.timeoutMs,
    maxRetries: options.maxRetries,
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

  /** A second factor: exclusive with refreshes while the client holds a session (it may be that session's step-up). */
  const rotating = (run: () => Promise<SignInResult>): Promise<SignInResult> =>
    access || readRefreshToken() ? exclusive(run) : run();

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

  /**
   * A passkey assertion, as first or second factor: `start` (with `input`), the browser's get(), then `finish`. An
   * autofill request waits until the person picks a passkey, possibly longer than its `state` lives: before that
   * expires, the request is cancelled and started again with a fresh state.
   */
  const assertion = async (
    start: ProcedurePath,
    finish: ProcedurePath,
    input?: unknown,
    autofill = false,
  ): Promise<SignInResult> => {
    for (;;) {
      const { options: requestOptions, state } = await call<AuthenticationCeremony>(start, input);
      // The server's schema types WebAuthn's enums as plain strings; the values are WebAuthn's own.
      const optionsJSON = requestOptions as PublicKeyCredentialRequestOptionsJSON;
      const { cancelCeremony } = webauthn;
      let renewing = false;
      const renewal =
        autofill && cancelCeremony && optionsJSON.timeout
          ? setTimeout(
              () => {
                renewing = true;
                cancelCeremony();
              },
              Math.max(optionsJSON.timeout - AUTOFILL_RENEW_MARGIN_MS, 1_000),
            )
          : undefined;
      let credential: Awaited<ReturnType<typeof startAuthentication>>;
      try {
        credential = await webauthn.startAuthentication({ optionsJSON, useBrowserAutofill: autofill });
      } catch (error) {
        if (renewing) continue;
        throw error;
      } finally {
        clearTimeout(renewal);
      }
      return signedIn(await call<SignInResult>(finish, { credential, state }));
    }
  };

  return {
    magicLink: {
      start: async (input, wait = {}) => {
        const started = await call<MagicLinkStarted>('auth.magicLink.start', input);
        if (!started.poll_secret) return { status: 'link_sent', verification_id: started.verification_id };
        const poll = { verification_id: started.verification_id, poll_secret: started.poll_secret };
        for (;;) {
          await pause(wait.pollIntervalMs ?? 2000, wait.signal);
          const answer = await call<MagicLinkPoll>('auth.magicLink.poll', poll);
          if (answer.status !== 'pending') return signedIn(answer);
        }
      },
      verify: async (input) => signedIn(await call<SignInResult>('auth.magicLink.verify', input)),
    },
    sso: {
      start: (input) => call<SsoStarted>('auth.sso.start', input),
      complete: async (input) => signedIn(await call<SignInResult>('auth.sso.complete', input)),
    },
    oauth: {
      async signIn(provider, redirect) {
        const { authorization_url } = await call<{ authorization_url: string }>('auth.oauth.start', {
          provider,
          redirect_uri: redirect.redirectUri,
          ...(redirect.hostId ? { host_id: redirect.hostId } : {}),
        });
        navigateTo(redirect)(authorization_url);
      },
      async handleCallback(callback) {
        const { provider, input } = oauthReturn(callback);
        return signedIn(await call<SignInResult>('auth.oauth.callback', { provider, ...input }));
      },
    },
    identities: {
      async link(provider, redirect) {
        const { authorization_url } = await authed<{ authorization_url: string }>('auth.identities.oauth.start', {
          provider,
          redirect_uri: redirect.redirectUri,
        });
        navigateTo(redirect)(authorization_url);
      },
      async handleLinkCallback(callback) {
        const { provider, input } = oauthReturn(callback);
        return authed<LinkedIdentity>('auth.identities.oauth.callback', { provider, ...input });
      },
      list: () => authed<LinkedIdentity[]>('auth.identities.list', undefined),
      remove: (id) => authed<Deleted>('auth.identities.delete', { id }),
    },
    consent: {
      accept: async (input) => signedIn(await call<SignInResult>('auth.consent.accept', input)),
    },
    me: () => authed<CurrentUser>('auth.me.get', undefined),
    updateMe: (input) => authed<CurrentUser>('auth.me.update', input),
    relations: (input) => authed<RelationPage>('authz.relations', input),
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
        const result = await authed<Deleted>('auth.sessions.revoke', { id });
        if (access?.session.session_id === id) clear();
        return result;
      },
    },
    session: () => authed<UserSession>('auth.session.get', undefined),
    grants: {
      list: () => authed<Grant[]>('auth.me.grants.list', undefined),
      revoke: (id) => authed<Deleted>('auth.me.grants.revoke', { id }),
    },
    oauth2: {
      interaction: (uid) => call<OAuth2Interaction>('auth.oauth2.interaction', { uid }),
      complete: (uid, approvedScopes) =>
        authed<OAuth2InteractionOutcome>('auth.oauth2.complete', { uid, approved_scopes: approvedScopes }),
      deny: (uid) => authed<OAuth2InteractionOutcome>('auth.oauth2.deny', { uid }),
    },
    passkeys: {
      async register(input) {
        const { options: creationOptions, state } = await authed<RegistrationCeremony>('auth.passkeys.register.start', undefined);
        // As in `assertion`: plain strings on the server's side, WebAuthn's values.
        const optionsJSON = creationOptions as PublicKeyCredentialCreationOptionsJSON;
        const credential = await webauthn.startRegistration({ optionsJSON });
        return authed<Passkey>('auth.passkeys.register.finish', { credential, state, name: input?.name });
      },
      signIn: (options) =>
        assertion(
          'auth.passkeys.signIn.start',
          'auth.passkeys.signIn.finish',
          options?.hostId ? { host_id: options.hostId } : undefined,
          options?.autofill,
        ),
      list: () => authed<Passkey[]>('auth.passkeys.list', undefined),
      remove: (id) => authed<Deleted>('auth.passkeys.delete', { id }),
    },
    mfa: {
      // A step-up's answer rotates the held session's refresh token: like a refresh, one rotation at a time (a
      // refresh racing it would present a token the step-up just replaced, which is reuse).
      passkey: (pendingToken) =>
        rotating(() => assertion('auth.passkeys.mfa.start', 'auth.passkeys.mfa.finish', { pending_token: pendingToken })),
      totp: (pendingToken, code) =>
        rotating(async () => signedIn(await call<SignInResult>('auth.mfa.totp.verify', { pending_token: pendingToken, code }))),
      backupCode: (pendingToken, code) =>
        rotating(async () =>
          signedIn(await call<SignInResult>('auth.mfa.backupCodes.verify', { pending_token: pendingToken, code })),
        ),
      stepUp: () => authed<StepUp>('auth.stepUp.start', undefined),
      enrollTotp: (input) => authed<TotpEnrollment>('auth.mfa.totp.enroll', input),
      confirmTotp: (input) => authed<MfaFactor>('auth.mfa.totp.confirm', input),
      createBackupCodes: () => authed<BackupCodes>('auth.mfa.backupCodes.create', undefined),
      factors: {
        list: () => authed<MfaFactor[]>('auth.mfa.factors.list', undefined),
        remove: (id) => authed<Deleted>('auth.mfa.factors.delete', { id }),
      },
    },
    invitations: {
      lookup: (token) => call<InvitationPreview>('auth.invitations.lookup', { token }),
      accept: (token) => authed<AcceptedInvitation>('auth.invitations.accept', { token }),
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
