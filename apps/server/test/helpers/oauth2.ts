import * as oidc from 'openid-client';
import { uniqueEmail } from './fixtures.ts';
import { ok, sql, type TestApp, type TestServer } from './server.ts';
import { endUser, type SmtpSink, signIn } from './sign-in.ts';

/** The configured base URL of test servers (links and issuers); requests are sent to the real listening address. */
export const BASE = 'http://gatehouse.test';
export const LOGIN_URL = 'https://app.example.test/login';
export const API_RESOURCE = 'https://api.example.test/';
export const WEB_CALLBACK = 'https://thirdparty.example.test/callback';
export const NATIVE_CALLBACK = 'http://127.0.0.1:8765/callback';

/** Requests to the configured base URL go to the server's real address (the test's DNS). */
export const resolveFetch =
  (server: TestServer): typeof fetch =>
  (input, init) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    return fetch(url.replace(BASE, server.url), init);
  };

export const issuerOf = (app: TestApp) => `${BASE}/oauth2/${app.id}`;

/** An application acting as an OAuth provider: its sign-in page, one scope of its own and one resource server. */
export async function oauthApp(server: TestServer, oauth2: Record<string, unknown> = {}): Promise<TestApp> {
  return server.createApp({
    settings: {
      oauth2: {
        login_url: LOGIN_URL,
        scopes: [{ name: 'read:docs', description: 'Read your documents' }],
        resources: [API_RESOURCE],
        ...oauth2,
      },
    },
  });
}

export interface RegisteredClient {
  id: string;
  client_secret: string | null;
  type: 'public' | 'confidential';
  redirect_uris: string[];
}

export async function createClient(app: TestApp, input: Record<string, unknown> = {}): Promise<RegisteredClient> {
  return ok(
    app.rest('POST', '/v1/oauth2/clients', {
      name: 'Third-party app',
      type: 'confidential',
      redirect_uris: [WEB_CALLBACK],
      scopes: ['openid', 'profile', 'email', 'offline_access', 'read:docs'],
      ...input,
    }),
    201,
  );
}

/** The third-party app: openid-client configured by discovery against the application's issuer. */
export async function relyingParty(server: TestServer, app: TestApp, client: RegisteredClient, secret = client.client_secret) {
  const auth = client.type === 'public' ? oidc.None() : oidc.ClientSecretBasic(secret!);
  const config = await oidc.discovery(new URL(issuerOf(app)), client.id, { id_token_signed_response_alg: 'EdDSA' }, auth, {
    execute: [oidc.allowInsecureRequests],
    [oidc.customFetch]: resolveFetch(server) as never,
  });
  return config;
}

/** A browser: follows nothing by itself, keeps the provider's cookies. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly server: TestServer;
  constructor(server: TestServer) {
    this.server = server;
  }

  async get(url: string): Promise<Response> {
    const response = await fetch(url.replace(BASE, this.server.url), {
      redirect: 'manual',
      headers: { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair!.indexOf('=');
      const name = pair!.slice(0, at);
      const value = pair!.slice(at + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return response;
  }

  /** Follows provider redirects until one leaves the provider (to the login page or the client's callback). */
  async follow(url: string): Promise<{ location: string; response: Response }> {
    let next = url;
    for (let hops = 0; hops < 10; hops++) {
      const response = await this.get(next);
      const location = response.headers.get('location');
      if (!location) return { location: '', response };
      const absolute = new URL(location, next).href;
      if (!absolute.startsWith(`${BASE}/oauth2/`)) return { location: absolute, response };
      next = absolute;
    }
    throw new Error('too many redirects');
  }
}

export interface AuthorizeOptions {
  scope?: string;
  resource?: string;
  redirectUri?: string;
  codeChallengeMethod?: string;
  withoutPkce?: boolean;
  /** Default `consent` (OpenID Connect grants offline_access only then); null sends none. */
  prompt?: string | null;
}

export interface Authorization {
  url: URL;
  verifier: string;
  state: string;
  browser: Browser;
}

export async function startAuthorization(
  server: TestServer,
  config: oidc.Configuration,
  options: AuthorizeOptions = {},
  browser = new Browser(server),
): Promise<Authorization & { first: { location: string; response: Response } }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const parameters: Record<string, string> = {
    redirect_uri: options.redirectUri ?? WEB_CALLBACK,
    scope: options.scope ?? 'openid email profile offline_access read:docs',
    state,
    // OpenID Connect grants offline_access (a refresh token) only with prompt=consent.
  };
  if (options.prompt !== null) parameters.prompt = options.prompt ?? 'consent';
  if (!options.withoutPkce) {
    parameters.code_challenge_method = options.codeChallengeMethod ?? 'S256';
    parameters.code_challenge =
      options.codeChallengeMethod === 'plain' ? verifier : await oidc.calculatePKCECodeChallenge(verifier);
  }
  if (options.resource) parameters.resource = options.resource;
  const url = oidc.buildAuthorizationUrl(config, parameters);
  const first = await browser.follow(url.href);
  return { url, verifier, state, browser, first };
}

/** The interaction uid of the redirect to the application's sign-in page. */
export function interactionUid(location: string): string {
  const url = new URL(location);
  if (`${url.origin}${url.pathname}` !== LOGIN_URL) throw new Error(`not the login page: ${location}`);
  return url.searchParams.get('interaction')!;
}

/**
 * The whole front channel: authorize → the application's sign-in page (a magic-link sign-in) → consent → back to the
 * provider → the client's callback with a code. Answers the callback URL and what the user used.
 */
export async function authorize(
  server: TestServer,
  smtp: SmtpSink,
  app: TestApp,
  config: oidc.Configuration,
  options: AuthorizeOptions & { email?: string; accessToken?: string; approve?: string[]; browser?: Browser } = {},
) {
  const started = await startAuthorization(server, config, options, options.browser);
  const uid = interactionUid(started.first.location);
  const accessToken =
    options.accessToken ?? (await signIn(server, smtp, app, options.email ?? uniqueEmail('oauth'))).tokens.access_token;
  const interaction = await ok(endUser(app, 'GET', `/v1/oauth2/interactions/${uid}`));
  const approve = options.approve ?? interaction.scopes.map((s: { name: string }) => s.name);
  const { redirect_to } = await ok(
    endUser(app, 'POST', `/v1/oauth2/interactions/${uid}/complete`, { approved_scopes: approve }, accessToken),
  );
  const back = await started.browser.follow(redirect_to);
  return { ...started, uid, interaction, accessToken, callback: new URL(back.location) };
}

export { oidc };

/** A raw token-endpoint request (form-encoded), sent to `target` (a process of the same deployment). */
export async function tokenRequest(
  target: TestServer,
  app: TestApp,
  form: Record<string, string>,
  client?: { id: string; secret?: string | null },
): Promise<{ status: number; body: Record<string, any> }> {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const body = new URLSearchParams(form);
  if (client?.secret) headers.authorization = `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;
  else if (client) body.set('client_id', client.id);
  const response = await fetch(`${target.url}/oauth2/${app.id}/token`, { method: 'POST', headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** The application's stored access and refresh tokens (kind, and whether spent), in a stable order. */
export const storedTokens = (server: TestServer, app: TestApp) =>
  sql<{ kind: string; consumed: boolean }>(
    server,
    `select kind, consumed_at is not null as consumed from oauth2_artifacts
      where application_id = ? and kind in ('AccessToken', 'RefreshToken') order by kind, consumed`,
    [app.id],
  );

/** Authorization code + PKCE for a resource server (RFC 8707): the tokens, bound to API_RESOURCE. */
export async function resourceTokens(server: TestServer, smtp: SmtpSink, app: TestApp, config: oidc.Configuration) {
  const flow = await authorize(server, smtp, app, config, { resource: API_RESOURCE });
  return oidc.authorizationCodeGrant(
    config,
    flow.callback,
    { pkceCodeVerifier: flow.verifier, expectedState: flow.state },
    { resource: API_RESOURCE },
  );
}
