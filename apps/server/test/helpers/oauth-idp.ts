/**
 * OAuth peers for tests, with no server dependency (the benchmark uses them too): a real OpenID Connect server (panva's
 * `oidc-provider`, driven through its own login and consent pages over HTTP), and stand-ins for Google and GitHub that
 * speak their documented wire format.
 *
 * Why stand-ins: the real Google and GitHub cannot be reached from CI. The server under test is constructed
 * in-process with `oauth.endpoints` (constructor injection, see `OAuthConfig.endpoints`): only a test can point a
 * built-in provider elsewhere — no environment variable or API call can, so a deployment cannot be redirected.
 */
import { createHash, randomBytes } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import Provider, { type Adapter, type AdapterPayload } from 'oidc-provider';

/** An HTTP response, never following redirects. */
export async function send(url: string, init: RequestInit & { cookies?: CookieJar } = {}) {
  const headers = new Headers(init.headers);
  if (init.cookies) headers.set('cookie', init.cookies.header());
  const response = await fetch(url, { ...init, headers, redirect: 'manual' });
  init.cookies?.take(response);
  return response;
}

/** Cookies by name (paths ignored: one browser, one test). */
export class CookieJar {
  #cookies = new Map<string, string>();
  take(response: Response) {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const index = pair!.indexOf('=');
      this.#cookies.set(pair!.slice(0, index), pair!.slice(index + 1));
    }
  }
  header() {
    return [...this.#cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// A real OpenID Connect server

export interface OidcAccount {
  email: string;
  email_verified: boolean;
  name?: string;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  accounts: Map<string, OidcAccount>;
  /** Drives the authorization as a browser: login as `accountId`, consent; answers the provider's final redirect. */
  /** `jar`: a browser's cookies kept across calls (signed in and consented once, later authorizations go straight back). */
  authorize(authorizationUrl: string, accountId: string, options?: { deny?: boolean; jar?: CookieJar }): Promise<string>;
  close(): Promise<void>;
}

export interface OidcProviderOptions {
  /** The client's registered redirect URIs. */
  redirectUris: string[];
  /** Listen on this port (default: any free one). */
  port?: number;
  /** Put the scope claims (email, name) in the ID token too, so no UserInfo call is needed (default false). */
  claimsInIdToken?: boolean;
  /** How long an authorization code lives (default oidc-provider's 60 s). */
  codeTtlS?: number;
}

/**
 * oidc-provider's storage without a size bound (its development adapter keeps 1000 entries, so a benchmark's prepared
 * codes would be evicted). Expiry is judged by oidc-provider itself from each payload's `exp`.
 */
function unboundedAdapter() {
  const store = new Map<string, AdapterPayload>();
  const byGrant = new Map<string, Set<string>>();
  return class MapAdapter implements Adapter {
    readonly #model: string;
    constructor(model: string) {
      this.#model = model;
    }
    #key = (id: string) => `${this.#model}:${id}`;
    async upsert(id: string, payload: AdapterPayload) {
      store.set(this.#key(id), payload);
      if (payload.grantId) {
        const members = byGrant.get(payload.grantId) ?? new Set<string>();
        members.add(this.#key(id));
        byGrant.set(payload.grantId, members);
      }
      if (payload.uid) store.set(`${this.#model}:uid:${payload.uid}`, { jti: id });
      if (payload.userCode) store.set(`${this.#model}:userCode:${payload.userCode}`, { jti: id });
    }
    async find(id: string) {
      return store.get(this.#key(id));
    }
    async findByUid(uid: string) {
      const ref = store.get(`${this.#model}:uid:${uid}`);
      return ref?.jti ? store.get(this.#key(ref.jti)) : undefined;
    }
    async findByUserCode(userCode: string) {
      const ref = store.get(`${this.#model}:userCode:${userCode}`);
      return ref?.jti ? store.get(this.#key(ref.jti)) : undefined;
    }
    async consume(id: string) {
      const payload = store.get(this.#key(id));
      if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    }
    async destroy(id: string) {
      store.delete(this.#key(id));
    }
    async revokeByGrantId(grantId: string) {
      for (const key of byGrant.get(grantId) ?? []) store.delete(key);
      byGrant.delete(grantId);
    }
  };
}

export async function startOidcProvider(options: OidcProviderOptions): Promise<TestOidcProvider> {
  const accounts = new Map<string, OidcAccount>();
  const httpServer = http.createServer();
  await new Promise<void>((resolve) => httpServer.listen(options.port ?? 0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}`;
  const clientId = `client-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: options.redirectUris,
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    features: { devInteractions: { enabled: true } },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    conformIdTokenClaims: !options.claimsInIdToken,
    adapter: unboundedAdapter(),
    ...(options.codeTtlS ? { ttl: { AuthorizationCode: options.codeTtlS } } : {}),
    async findAccount(_ctx, id) {
      const account = accounts.get(id);
      if (!account) return undefined;
      return { accountId: id, claims: () => ({ sub: id, ...account }) };
    },
  });
  provider.on('server_error', () => {});
  httpServer.on('request', provider.callback());

  async function authorize(authorizationUrl: string, accountId: string, options: { deny?: boolean; jar?: CookieJar } = {}) {
    const jar = options.jar ?? new CookieJar();
    let response = await send(authorizationUrl, { cookies: jar });
    for (let hop = 0; hop < 10; hop++) {
      const location = response.headers.get('location');
      if (!location) throw new Error(`the provider answered ${response.status}: ${await response.text()}`);
      const next = new URL(location, issuer);
      if (next.origin !== issuer) return next.toString();
      const interaction = /^\/interaction\/([^/]+)$/.exec(next.pathname);
      if (!interaction) {
        response = await send(next.toString(), { cookies: jar });
        continue;
      }
      const page = await send(next.toString(), { cookies: jar });
      const html = await page.text();
      if (options.deny) {
        response = await send(`${next}/abort`, { cookies: jar });
        continue;
      }
      const prompt = html.includes('name="login"') ? 'login' : 'consent';
      response = await send(next.toString(), {
        method: 'POST',
        cookies: jar,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(prompt === 'login' ? { prompt, login: accountId, password: 'any' } : { prompt }).toString(),
      });
    }
    throw new Error('too many redirects at the provider');
  }

  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    authorize,
    close: () => new Promise((resolve) => httpServer.close(() => resolve())),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Google and GitHub stand-ins (their documented wire format)

export interface StandInUser {
  sub: string;
  email: string | null;
  email_verified: boolean;
  name?: string;
}

/** How the next ID token is spoiled (the attacks of the issue). */
export interface IdTokenTampering {
  claims?: Record<string, unknown>;
  /** Signed by a key that is not in the JWKS. */
  otherKey?: boolean;
  /** `alg: none`, unsigned. */
  unsigned?: boolean;
}

interface IssuedCode {
  provider: 'google' | 'github';
  clientId: string;
  redirectUri: string;
  challenge: string | null;
  nonce: string | null;
  user: StandInUser;
  used: boolean;
}

export interface StandIn {
  url: string;
  /** The endpoints to inject into the server under test (`oauth.endpoints`). */
  endpoints: Record<'google' | 'github', Record<string, string>>;
  clients: Record<'google' | 'github', { id: string; secret: string }>;
  /** The signed-in person at the provider, per provider. */
  user: Record<'google' | 'github', StandInUser>;
  /** GitHub's `/user/emails` answer is built from `user.github` unless set here. */
  githubEmails: Array<{ email: string; primary: boolean; verified: boolean }> | null;
  tampering: IdTokenTampering | null;
  /** How many codes the token endpoint redeemed. */
  redeemed: number;
  /** Follows an authorization URL as the browser would (the person is signed in and consents): the redirect. */
  authorize(authorizationUrl: string): Promise<string>;
  close(): Promise<void>;
}

const s256 = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

export async function startStandIn(): Promise<StandIn> {
  const key = await generateKeyPair('RS256');
  const otherKey = await generateKeyPair('RS256');
  const jwk: JWK = { ...(await exportJWK(key.publicKey)), kid: 'standin-1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, IssuedCode>();
  const accessTokens = new Map<string, StandInUser>();
  const clients = {
    google: { id: `g-${randomBytes(4).toString('hex')}.apps.googleusercontent.com`, secret: randomBytes(16).toString('hex') },
    github: { id: `Iv1.${randomBytes(8).toString('hex')}`, secret: randomBytes(20).toString('hex') },
  };
  const state: Omit<StandIn, 'url' | 'endpoints' | 'authorize' | 'close' | 'clients'> = {
    user: {
      google: { sub: '1000001', email: 'g@example.com', email_verified: true },
      github: { sub: '2000001', email: 'gh@example.com', email_verified: true },
    },
    githubEmails: null,
    tampering: null,
    redeemed: 0,
  };

  async function idToken(code: IssuedCode): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: 'https://accounts.google.com',
      azp: code.clientId,
      aud: code.clientId,
      sub: code.user.sub,
      email: code.user.email,
      email_verified: code.user.email_verified,
      name: code.user.name,
      iat: now,
      exp: now + 3600,
      ...(code.nonce ? { nonce: code.nonce } : {}),
      ...(state.tampering?.claims ?? {}),
    };
    if (state.tampering?.unsigned) {
      const part = (v: object) => Buffer.from(JSON.stringify(v)).toString('base64url');
      return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
    }
    return new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: 'standin-1', typ: 'JWT' })
      .sign(state.tampering?.otherKey ? otherKey.privateKey : key.privateKey);
  }

  const json = (res: ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  async function readForm(req: IncomingMessage) {
    let body = '';
    for await (const chunk of req) body += chunk;
    return new URLSearchParams(body);
  }

  async function token(provider: 'google' | 'github', req: IncomingMessage, res: ServerResponse) {
    const form = await readForm(req);
    const basic = Buffer.from((req.headers.authorization ?? '').replace(/^Basic /, ''), 'base64').toString();
    const [id, secret] = basic.split(':').map(decodeURIComponent);
    // GitHub answers its errors with 200 and an `error` field; Google with 400 (both documented).
    const fail = (error: string) => json(res, provider === 'github' ? 200 : 400, { error, error_description: 'refused' });
    if (id !== clients[provider].id || secret !== clients[provider].secret) return fail('invalid_client');
    const code = codes.get(form.get('code') ?? '');
    if (!code || code.used || code.provider !== provider)
      return fail(provider === 'github' ? 'bad_verification_code' : 'invalid_grant');
    code.used = true;
    if (form.get('redirect_uri') !== code.redirectUri) return fail('redirect_uri_mismatch');
    if (code.challenge && s256(form.get('code_verifier') ?? '') !== code.challenge) return fail('invalid_grant');
    state.redeemed++;
    const accessToken = randomBytes(20).toString('hex');
    accessTokens.set(accessToken, code.user);
    if (provider === 'github')
      return json(res, 200, { access_token: accessToken, token_type: 'bearer', scope: 'read:user,user:email' });
    return json(res, 200, {
      access_token: accessToken,
      token_type: 'Bearer',
      expires_in: 3599,
      scope: 'openid email profile',
      id_token: await idToken(code),
    });
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url!, 'http://localhost');
    const route = `${req.method} ${url.pathname}`;
    const bearer = accessTokens.get((req.headers.authorization ?? '').replace(/^Bearer /, ''));
    (async () => {
      switch (route) {
        case 'POST /google/token':
          return token('google', req, res);
        case 'POST /github/token':
          return token('github', req, res);
        case 'GET /google/jwks':
          return json(res, 200, { keys: [jwk] });
        case 'GET /github/api/user':
          if (!bearer) return json(res, 401, { message: 'Bad credentials' });
          return json(res, 200, {
            id: Number(bearer.sub),
            login: `user${bearer.sub}`,
            name: bearer.name ?? null,
            avatar_url: null,
          });
        case 'GET /github/api/user/emails':
          if (!bearer) return json(res, 401, { message: 'Bad credentials' });
          return json(
            res,
            200,
            state.githubEmails ??
              (bearer.email
                ? [{ email: bearer.email, primary: true, verified: bearer.email_verified, visibility: 'private' }]
                : []),
          );
        default:
          return json(res, 404, { message: 'Not Found' });
      }
    })().catch((error) => json(res, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  /** The provider's consent page, as the browser meets it: it checks the request and redirects with a code. */
  async function authorize(authorizationUrl: string): Promise<string> {
    const request = new URL(authorizationUrl);
    const provider = request.pathname.startsWith('/google/') ? 'google' : 'github';
    const params = request.searchParams;
    if (params.get('client_id') !== clients[provider].id) throw new Error('unknown client_id');
    if (params.get('response_type') !== 'code') throw new Error('response_type must be code');
    const code = randomBytes(16).toString('hex');
    codes.set(code, {
      provider,
      clientId: params.get('client_id')!,
      redirectUri: params.get('redirect_uri')!,
      challenge: params.get('code_challenge_method') === 'S256' ? params.get('code_challenge') : null,
      nonce: params.get('nonce'),
      user: { ...state.user[provider] },
      used: false,
    });
    const back = new URL(params.get('redirect_uri')!);
    back.searchParams.set('code', code);
    back.searchParams.set('state', params.get('state')!);
    return back.toString();
  }

  return Object.assign(state, {
    url,
    clients,
    endpoints: {
      google: { authorization: `${url}/google/authorize`, token: `${url}/google/token`, jwks: `${url}/google/jwks` },
      github: { authorization: `${url}/github/authorize`, token: `${url}/github/token`, api: `${url}/github/api` },
    },
    authorize,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }) as StandIn;
}
