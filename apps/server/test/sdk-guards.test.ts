import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getAuth, requireAuth } from '@gatehouse/sdk/express';
import { type AuthRequirements, type GatehouseAuth, type GuardOptions, gatehouseAuth } from '@gatehouse/sdk/fastify';
import { createNextAuth } from '@gatehouse/sdk/next';
import express from 'express';
import Fastify, { type FastifyInstance } from 'fastify';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrg, uniqueEmail } from './helpers/fixtures.ts';
import { enrolTotp, expectAal2, mfaRequired, totpCode } from './helpers/mfa.ts';
import { isoDate, ok, type TestApp, UUID } from './helpers/server.ts';
import { endUser, type SignInResult, signIn, type Tokens } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';
import { b64url, craft, ed25519, now, realSigningKey } from './helpers/tokens.ts';

/**
 * The framework guards of the SDK (`@gatehouse/sdk/express`, `/fastify`, `/next`) in front of real apps: an Express
 * server and a Fastify server on local ports, and the Next.js middleware and route wrapper called with real `Request`s.
 * The tokens are real: signed in through the service, or crafted with the application's own signing key.
 */
const suite = serverSuite();
/** The issuer the test server signs with (its GATEHOUSE_BASE_URL); the guards reach it at `suite.server.url`. */
const ISSUER = 'http://gatehouse.test';

/** The routes every framework serves, each answering `{ auth }`: one per requirement. */
const ROUTES: Record<string, AuthRequirements> = {
  '/me': {},
  '/org': { requireOrganization: true },
  '/admin': { roles: ['owner', 'admin'] },
  '/mfa': { minimumAal: 2 },
};

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}
/** One framework's app: `call(path, headers)` sends a GET through it. */
interface Framework {
  call(path: string, headers?: Record<string, string>): Promise<Answer>;
  close(): Promise<void>;
}

const read = async (response: Response): Promise<Answer> => ({
  status: response.status,
  headers: response.headers,
  body: await response.json(),
});

async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const closing = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

async function expressApp(options: GuardOptions): Promise<Framework> {
  const app = express();
  for (const [path, requirements] of Object.entries(ROUTES)) {
    app.get(path, requireAuth({ ...options, ...requirements }), (req, res) => {
      res.json({ auth: getAuth(req) });
    });
  }
  // A whole prefix behind one guard, the handler reading the typed `req.auth`.
  app.use('/api', requireAuth(options));
  app.get('/api/whoami', (req, res) => {
    const userId: string | undefined = req.auth?.userId;
    res.json({ userId });
  });
  // A route the guard does not cover: getAuth is a routing mistake there (500), never a pass.
  app.get('/unguarded', (req, res) => {
    res.json({ auth: getAuth(req) });
  });
  app.use((error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ fault: error.message });
  });
  const server = createServer(app);
  const url = await listening(server);
  return {
    call: async (path, headers = {}) => read(await fetch(`${url}${path}`, { headers })),
    close: () => closing(server),
  };
}

async function fastifyApp(options: GuardOptions): Promise<Framework & { app: FastifyInstance }> {
  const app = Fastify();
  await app.register(gatehouseAuth, options);
  for (const [path, requirements] of Object.entries(ROUTES)) {
    // One route takes the hook as its preHandler, the others as onRequest: both kinds of route hook work.
    const hook = path === '/org' ? 'preHandler' : 'onRequest';
    app.get(path, { [hook]: app.requireAuth(requirements) }, async (request) => ({ auth: request.auth }));
  }
  // The plugin is not encapsulated: a child context uses the same decorations, with one hook for all its routes.
  await app.register(
    async (api) => {
      api.addHook('onRequest', api.requireAuth());
      api.get('/whoami', async (request) => ({ userId: request.auth?.userId }));
    },
    { prefix: '/api' },
  );
  app.get('/unguarded', async (request) => ({ auth: request.auth }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    app,
    call: async (path, headers = {}) => read(await fetch(`${url}${path}`, { headers })),
    close: () => app.close(),
  };
}

async function nextApp(options: GuardOptions): Promise<Framework> {
  const gatehouse = createNextAuth(options);
  const handlers = Object.fromEntries(
    Object.entries(ROUTES).map(([path, requirements]) => [
      path,
      gatehouse.withAuth<{ params: Promise<Record<string, string>> }>(async (_request, { auth, params }) => {
        expect(await params).toEqual({ route: path });
        return Response.json({ auth });
      }, requirements),
    ]),
  );
  return {
    async call(path, headers = {}) {
      const request = new Request(`https://app.example.com${path}`, { headers });
      if (path.startsWith('/api/')) {
        // What middleware.ts does: a refusal, or nothing (the request continues to its route).
        const refused = await gatehouse.middleware(request);
        if (refused) return read(refused);
        return { status: 200, headers: new Headers(), body: { passed: true } };
      }
      const handler = handlers[new URL(request.url).pathname];
      if (!handler) throw new Error(`no route ${path}`);
      return read(await handler(request, { params: Promise.resolve({ route: path }) }));
    },
    close: async () => {},
  };
}

const FRAMEWORKS = { express: expressApp, fastify: fastifyApp, next: nextApp };

/** A refusal in the service's envelope, with its challenge (null: no WWW-Authenticate header at all). */
function expectRefusal(res: Answer, status: number, code: string, challenge: string | RegExp | null, label = '') {
  expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.body, label).toEqual({
    success: false,
    data: null,
    error: { code, message: expect.any(String) },
    meta: { timestamp: isoDate, request_id: expect.any(String) },
  });
  if (challenge instanceof RegExp) expect(res.headers.get('www-authenticate'), label).toMatch(challenge);
  else expect(res.headers.get('www-authenticate'), label).toBe(challenge);
  expect(res.headers.get('content-type'), label).toMatch(/^application\/json/);
  expect(res.headers.get('cache-control'), label).toBe('no-store');
}

const INVALID = 'Bearer error="invalid_token", error_description="The access token is invalid or expired"';
const expectInvalid = (res: Answer, label: string) => expectRefusal(res, 401, 'invalid_token', INVALID, label);
/** The 403s name the RFC 6750 error with a description; the body's code says which requirement failed. */
const expectForbidden = (res: Answer, code: string, label: string) =>
  expectRefusal(res, 403, code, /^Bearer error="insufficient_scope", error_description="[^"\\]+"$/, label);
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

let app: TestApp;
let guard: GuardOptions;
/** Signed in at aal 1 with no organization. */
let plain: Tokens & { user_id: string };
/** Admin of `org`, switched to it. */
let admin: Tokens & { user_id: string };
/** A plain member of `org`, switched to it. */
let member: Tokens & { user_id: string };
/** Signed in with a second factor (aal 2), no organization. */
let strong: Tokens & { user_id: string };
let org: { id: string };

async function signedIn(email = uniqueEmail('guard')) {
  const { tokens, user } = await signIn(suite.server, suite.smtp, app, email);
  return { ...tokens, user_id: user.id };
}

async function inOrganization(role: string) {
  const person = await signedIn();
  await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: person.user_id, role }), 201);
  const switched = await ok(
    endUser<Tokens>(app, 'POST', '/v1/auth/session/organization', { organization_id: org.id }, person.access_token),
  );
  return { ...switched, user_id: person.user_id };
}

beforeAll(async () => {
  app = await suite.server.createApp();
  guard = { baseUrl: suite.server.url, applicationId: app.id, issuer: ISSUER };
  org = await createOrg(app);
  plain = await signedIn();
  admin = await inOrganization('admin');
  member = await inOrganization('member');

  const email = uniqueEmail('aal2');
  const first = await signedIn(email);
  const { secret } = await enrolTotp(app, first.access_token);
  // The notice of the new factor, so that the sign-in below reads its own mail.
  expect((await suite.smtp.next(email)).html).toContain('A second factor (Authenticator app) was added');
  const pending = await mfaRequired(suite, app, email, ['totp']);
  // The next step's code: the confirmation's code is used up.
  const verified = await endUser<SignInResult>(app, 'POST', '/v1/auth/mfa/totp/verify', {
    pending_token: pending,
    code: totpCode(secret, 30_000),
  });
  strong = { ...expectAal2(verified).tokens, user_id: first.user_id };
});

describe.each(Object.keys(FRAMEWORKS) as Array<keyof typeof FRAMEWORKS>)('the %s guard', (name) => {
  let framework: Framework;
  beforeAll(async () => {
    framework = await FRAMEWORKS[name](guard);
  });
  afterAll(() => framework?.close());

  it('lets a valid token through and hands the handler the user, the session and the organization', async () => {
    const res = await framework.call('/me', bearer(plain.access_token));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.auth).toEqual({
      userId: plain.user_id,
      sessionId: plain.session_id,
      organizationId: null,
      organizationRole: null,
      aal: 1,
      claims: expect.objectContaining({ sub: plain.user_id, sid: plain.session_id, aud: app.id, iss: ISSUER, org: null }),
    });

    const inOrg = await framework.call('/me', bearer(admin.access_token));
    expect(inOrg.status).toBe(200);
    expect(inOrg.body.auth).toMatchObject({
      userId: admin.user_id,
      sessionId: admin.session_id,
      organizationId: org.id,
      organizationRole: 'admin',
      aal: 1,
    });
    // The scheme is case-insensitive (RFC 7235).
    const lower = await framework.call('/me', { authorization: `bearer ${plain.access_token}` });
    expect(lower.status).toBe(200);
  });

  it('guards a whole prefix with one guard (Express app.use, a Fastify hook, the Next.js middleware)', async () => {
    const passed = await framework.call('/api/whoami', bearer(plain.access_token));
    expect(passed.status).toBe(200);
    if (name !== 'next') expect(passed.body).toEqual({ userId: plain.user_id });
    expectRefusal(await framework.call('/api/whoami'), 401, 'missing_credentials', 'Bearer', 'no token');
    expectInvalid(await framework.call('/api/whoami', bearer('not-a-token')), 'bad token');
  });

  it('refuses a request without bearer credentials with 401 missing_credentials and a bare Bearer challenge', async () => {
    const token = plain.access_token;
    const cases: Array<[string, Record<string, string>]> = [
      ['no header', {}],
      ['another scheme', { authorization: `Basic ${Buffer.from('ada:secret').toString('base64')}` }],
      ['the token without a scheme', { authorization: token }],
      ['a scheme that only starts like Bearer', { authorization: `Bearerx ${token}` }],
      // Only the Authorization header counts: never a cookie or a query parameter (RFC 6750 §2.3 is not supported).
      ['the token in a cookie', { cookie: `access_token=${token}; gatehouse=${token}` }],
    ];
    for (const [label, headers] of cases) {
      expectRefusal(await framework.call('/me', headers), 401, 'missing_credentials', 'Bearer', label);
    }
    expectRefusal(await framework.call(`/me?access_token=${token}`), 401, 'missing_credentials', 'Bearer', 'query token');
  });

  it('refuses malformed, expired, foreign, unsigned and tampered tokens with 401 invalid_token', async () => {
    const other = await suite.server.createApp();
    const foreign = await signIn(suite.server, suite.smtp, other, uniqueEmail('foreign'));
    const claims = decodeJwt(plain.access_token);
    const header = decodeProtectedHeader(plain.access_token);
    const { kid, key } = await realSigningKey(suite.server, app.id);
    const sign = ed25519(key);
    const [head, payload, signature] = plain.access_token.split('.') as [string, string, string];
    // The first character carries six bits of the signature (the last one partly padding).
    const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;

    const cases: Array<[string, string]> = [
      ['Bearer and nothing', 'Bearer'],
      ['Bearer and spaces', 'Bearer    '],
      ['not a JWT', 'Bearer not-a-token'],
      ['two tokens', `Bearer ${plain.access_token} ${plain.access_token}`],
      ['a character outside the token alphabet', `Bearer ${plain.access_token}!`],
      ['far too long', `Bearer ${'a'.repeat(9000)}`],
      [
        'expired (signed with the real key)',
        `Bearer ${craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, { ...claims, iat: now() - 700, exp: now() - 100 }, sign)}`,
      ],
      ["another application's genuine token", `Bearer ${foreign.tokens.access_token}`],
      ['alg none, unsigned', `Bearer ${craft({ ...header, alg: 'none' }, { ...claims, exp: now() + 300 })}`],
      ['alg none with the real signature', `Bearer ${craft({ ...header, alg: 'none' }, claims)}${signature}`],
      ['a tampered signature', `Bearer ${head}.${payload}.${flipped}`],
      ['a tampered payload (sub)', `Bearer ${head}.${b64url({ ...claims, sub: admin.user_id })}.${signature}`],
      ['a tampered payload (org)', `Bearer ${head}.${b64url({ ...claims, org: org.id, org_role: 'owner' })}.${signature}`],
      ['a tampered payload (aal)', `Bearer ${head}.${b64url({ ...claims, aal: 2 })}.${signature}`],
      ['a refresh token', `Bearer ${plain.refresh_token}`],
      [
        "the application's OAuth provider issuer (a token for a third-party app)",
        `Bearer ${craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, { ...claims, iss: `${ISSUER}/oauth2/${app.id}`, exp: now() + 300 }, sign)}`,
      ],
      [
        'not an access token (typ JWT)',
        `Bearer ${craft({ alg: 'EdDSA', kid, typ: 'JWT' }, { ...claims, exp: now() + 300 }, sign)}`,
      ],
    ];
    for (const [label, authorization] of cases) expectInvalid(await framework.call('/me', { authorization }), label);
    // Control: the same key and claims, unexpired, pass (so the refusals above are about what was changed).
    const control = craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, { ...claims, iat: now(), exp: now() + 300 }, sign);
    expect((await framework.call('/me', bearer(control))).status).toBe(200);
    expect((await framework.call('/me', bearer(plain.access_token))).status).toBe(200);
  });

  it('refuses a token short of the route’s organization, role or aal with 403, and passes one that meets them', async () => {
    // No organization active.
    expectForbidden(await framework.call('/org', bearer(plain.access_token)), 'insufficient_scope', 'org: none');
    expectForbidden(await framework.call('/admin', bearer(plain.access_token)), 'insufficient_scope', 'role: no org');
    // A member is in the organization but not in the roles allowed.
    expect((await framework.call('/org', bearer(member.access_token))).body.auth).toMatchObject({
      organizationId: org.id,
      organizationRole: 'member',
    });
    expectForbidden(await framework.call('/admin', bearer(member.access_token)), 'insufficient_scope', 'role: member');
    const asAdmin = await framework.call('/admin', bearer(admin.access_token));
    expect(asAdmin.status).toBe(200);
    expect(asAdmin.body.auth).toMatchObject({ userId: admin.user_id, organizationRole: 'admin' });
    // aal 1 is refused where aal 2 is needed; a second-factor session passes.
    expectForbidden(await framework.call('/mfa', bearer(admin.access_token)), 'step_up_required', 'aal 1');
    const stepped = await framework.call('/mfa', bearer(strong.access_token));
    expect(stepped.status).toBe(200);
    expect(stepped.body.auth).toMatchObject({ userId: strong.user_id, aal: 2 });
    // A token that verified before (remembered by verifyToken) is still held to each route's requirements.
    expectForbidden(await framework.call('/org', bearer(plain.access_token)), 'insufficient_scope', 'remembered token');
  });

  it('echoes a valid x-request-id in the error body, and makes one up for an invalid one', async () => {
    expect((await framework.call('/me', { 'x-request-id': 'req-42.a:b' })).body.meta.request_id).toBe('req-42.a:b');
    expect((await framework.call('/me', { 'x-request-id': 'has spaces' })).body.meta.request_id).toMatch(UUID);
  });
});

describe('what the guards share', () => {
  it('fails closed when the signing keys cannot be fetched: 503 service_unavailable, never the handler', async () => {
    // A key-set address nobody listens on, and one that answers 500.
    const gone = createServer();
    const goneUrl = await listening(gone);
    await closing(gone);
    const broken = createServer((_req, res) => res.writeHead(500).end('oops'));
    const brokenUrl = await listening(broken);
    try {
      for (const baseUrl of [goneUrl, brokenUrl]) {
        const options: GuardOptions = { ...guard, baseUrl };
        for (const [name, make] of Object.entries(FRAMEWORKS)) {
          const framework = await make(options);
          try {
            // A token the real key set accepted (and verifyToken remembers) does not pass a guard of another key set.
            const res = await framework.call('/me', bearer(plain.access_token));
            expectRefusal(res, 503, 'service_unavailable', null, `${name} at ${baseUrl}`);
            expect(res.headers.get('retry-after')).toBe('5');
            // A missing token is still a 401: nothing needed the keys.
            expectRefusal(await framework.call('/me'), 401, 'missing_credentials', 'Bearer', name);
          } finally {
            await framework.close();
          }
        }
      }
    } finally {
      await closing(broken);
    }
  });

  it('cannot see a revoked session: its token passes until it expires (the design of local verification)', async () => {
    const person = await signedIn();
    const framework = await expressApp(guard);
    try {
      expect((await framework.call('/me', bearer(person.access_token))).status).toBe(200);
      expect(await app.sdk.users.revokeSessions({ id: person.user_id })).toEqual({ user_id: person.user_id, revoked: 1 });
      // The service refuses it at once; the guard, which never calls the service, cannot know.
      expect((await endUser(app, 'GET', '/v1/auth/me', undefined, person.access_token)).status).toBe(401);
      expect((await framework.call('/me', bearer(person.access_token))).status).toBe(200);
      expect(decodeJwt(person.access_token).exp).toBeLessThanOrEqual(now() + 600);
    } finally {
      await framework.close();
    }
  });

  it('refuses options that could not work when the guard is made, not on the first request', async () => {
    const bad: Array<[string, Partial<GuardOptions>]> = [
      ['no baseUrl', { applicationId: app.id }],
      ['no applicationId', { baseUrl: suite.server.url }],
      ['roles: []', { ...guard, roles: [] }],
      ['minimumAal 3', { ...guard, minimumAal: 3 as 2 }],
    ];
    for (const [label, options] of bad) {
      expect(() => requireAuth(options as GuardOptions), label).toThrow(TypeError);
      expect(() => createNextAuth(options as GuardOptions), label).toThrow(TypeError);
      const fastify = Fastify();
      await expect(fastify.register(gatehouseAuth, options as GuardOptions).ready(), label).rejects.toThrow(TypeError);
      await fastify.close();
    }
    const fastify = await fastifyApp(guard);
    try {
      expect(() => fastify.app.requireAuth({ roles: [] }), 'route roles: []').toThrow(TypeError);
      expect(() => createNextAuth(guard).withAuth(async () => new Response(), { roles: [] })).toThrow(TypeError);
    } finally {
      await fastify.close();
    }
  });

  it('leaves unguarded routes alone: Fastify’s request.auth is null, Express’s getAuth is a 500 (a routing mistake)', async () => {
    const fastify = await fastifyApp(guard);
    const express = await expressApp(guard);
    try {
      expect(await fastify.call('/unguarded', bearer(plain.access_token))).toMatchObject({ status: 200, body: { auth: null } });
      const res = await express.call('/unguarded', bearer(plain.access_token));
      expect(res.status).toBe(500);
      expect(res.body.fault).toMatch(/requireAuth\(\) of @gatehouse\/sdk\/express did not run/);
    } finally {
      await fastify.close();
      await express.close();
    }
  });

  it('hands every framework the same frozen auth object shape', async () => {
    const gatehouse = createNextAuth(guard);
    const verdict = await gatehouse.authenticate(
      new Request('https://app.example.com/', { headers: bearer(admin.access_token) }),
    );
    const auth: GatehouseAuth | null = verdict.auth;
    expect(verdict.response).toBeNull();
    expect(Object.isFrozen(auth)).toBe(true);
    expect(Object.keys(auth ?? {}).sort()).toEqual([
      'aal',
      'claims',
      'organizationId',
      'organizationRole',
      'sessionId',
      'userId',
    ]);
    const refused = await gatehouse.authenticate(new Request('https://app.example.com/'), { minimumAal: 2 });
    expect(refused.auth).toBeNull();
    expect(refused.response?.status).toBe(401);
  });
});
