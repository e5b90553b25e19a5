import { createHmac, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SecretBox } from '@gatehouse/api';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, type JWTPayload, jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { expectError, rawRequest, sql, type TestApp } from './helpers/server.ts';
import { endUser, signIn, type Tokens } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';
import { b64url, craft, ed25519, now, realSigningKey as signingKeyOf } from './helpers/tokens.ts';

const suite = serverSuite();

const BASE_URL = 'http://gatehouse.test';
/** A well-formed UUID (v7 layout) that no application has. */
const UNKNOWN_ID = '01890000-0000-7000-8000-000000000000';

/** A fresh application with one signed-in user. */
async function signedInApp(email = 'ada@example.com') {
  const app = await suite.server.createApp();
  const { tokens, user } = await signIn(suite.server, suite.smtp, app, email);
  return { app, tokens, user, claims: decodeJwt(tokens.access_token) };
}

const me = (app: TestApp, token: string, headers: Record<string, string | undefined> = {}) =>
  endUser(app, 'GET', '/v1/auth/me', undefined, token, headers);

const jwksUrl = (appId: string) => new URL(`${suite.server.url}/v1/applications/${appId}/jwks.json`);
const wellKnownJwks = (appId: string) =>
  createRemoteJWKSet(new URL(`${suite.server.url}/v1/.well-known/jwks.json`), { headers: { 'x-application-id': appId } });

const hs256 = (secret: Buffer) => (input: Buffer) => createHmac('sha256', secret).update(input).digest();
const realSigningKey = (appId: string) => signingKeyOf(suite.server, appId);

const attackerKey = () => generateKeyPairSync('ed25519').privateKey;

describe('JWKS: published keys, verification with jose, rotation', () => {
  it('serves the same unenveloped, cacheable key set at both addresses; tokens verify with createRemoteJWKSet', async () => {
    const { app, tokens, user } = await signedInApp();
    const byId = await rawRequest(suite.server.url, 'GET', `/v1/applications/${app.id}/jwks.json`);
    const wellKnown = await rawRequest(suite.server.url, 'GET', '/v1/.well-known/jwks.json', {
      headers: { 'x-application-id': app.id },
    });
    for (const res of [byId, wellKnown]) {
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=300');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      // Not enveloped: standard tools read `keys` at the top level.
      expect(Object.keys(res.body)).toEqual(['keys']);
      expect(res.body.keys).toHaveLength(1);
      const [jwk] = res.body.keys;
      expect(Object.keys(jwk).sort()).toEqual(['alg', 'crv', 'kid', 'kty', 'use', 'x']);
      expect(jwk).toMatchObject({
        kty: 'OKP',
        crv: 'Ed25519',
        alg: 'EdDSA',
        use: 'sig',
        kid: decodeProtectedHeader(tokens.access_token).kid,
      });
      expect(jwk.d).toBeUndefined();
    }
    expect(wellKnown.body).toEqual(byId.body);

    for (const keySet of [createRemoteJWKSet(jwksUrl(app.id)), wellKnownJwks(app.id)]) {
      const { payload, protectedHeader } = await jwtVerify(tokens.access_token, keySet, {
        issuer: BASE_URL,
        audience: app.id,
        algorithms: ['EdDSA'],
        typ: 'at+jwt',
      });
      expect(protectedHeader.alg).toBe('EdDSA');
      expect(payload).toMatchObject({ sub: user.id, sid: tokens.session_id, aal: 1, org: null, org_role: null });
    }
  });

  it('the well-known JWKS is selected by x-application-id, so its public cache entry must vary by it', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const get = (id: string) =>
      rawRequest(suite.server.url, 'GET', '/v1/.well-known/jwks.json', { headers: { 'x-application-id': id } });
    const [forA, forB] = [await get(a.id), await get(b.id)];
    // One URL, two different public, cacheable documents: without `Vary: x-application-id` a shared cache (CDN,
    // proxy) stores A's keys and serves them to B's verifiers for five minutes.
    expect(forA.body).not.toEqual(forB.body);
    for (const res of [forA, forB]) {
      expect(res.headers.get('cache-control')).toBe('public, max-age=300');
      const vary = (res.headers.get('vary') ?? '').split(',').map((v) => v.trim().toLowerCase());
      expect(vary, `vary: ${res.headers.get('vary')}`).toContain('x-application-id');
    }
  });

  it('rotation: the new key signs, the old key stays published, and tokens it signed keep verifying', async () => {
    const { app, tokens } = await signedInApp();
    const oldKid = decodeProtectedHeader(tokens.access_token).kid!;

    const rotated = await app.rest('POST', `/v1/applications/${app.id}/signing-keys/rotate`);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(rotated.body.success).toBe(true);
    const newKid: string = rotated.body.data.kid;
    expect(newKid).not.toBe(oldKid);
    expect(rotated.body.data.keys.map((k: { kid: string }) => k.kid).sort()).toEqual([newKid, oldKid].sort());

    for (const path of [`/v1/applications/${app.id}/jwks.json`, '/v1/.well-known/jwks.json']) {
      const res = await rawRequest(suite.server.url, 'GET', path, { headers: { 'x-application-id': app.id } });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('public, max-age=300');
      expect(Object.keys(res.body)).toEqual(['keys']);
      expect(res.body.keys.map((k: { kid: string }) => k.kid).sort()).toEqual([newKid, oldKid].sort());
    }

    // The token signed before the rotation still verifies, for an outside verifier and for the service.
    const options = { issuer: BASE_URL, audience: app.id, algorithms: ['EdDSA'] };
    await expect(jwtVerify(tokens.access_token, createRemoteJWKSet(jwksUrl(app.id)), options)).resolves.toBeTruthy();
    await expect(jwtVerify(tokens.access_token, wellKnownJwks(app.id), options)).resolves.toBeTruthy();
    expect((await me(app, tokens.access_token)).status).toBe(200);

    // Tokens issued after the rotation (refresh, and a new sign-in) carry the new kid and verify too.
    const refreshed = await endUser<Tokens>(app, 'POST', '/v1/auth/token/refresh', { refresh_token: tokens.refresh_token });
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    const fresh = (await signIn(suite.server, suite.smtp, app, 'grace@example.com')).tokens;
    for (const token of [refreshed.body.data.access_token, fresh.access_token]) {
      expect(decodeProtectedHeader(token).kid).toBe(newKid);
      await expect(jwtVerify(token, createRemoteJWKSet(jwksUrl(app.id)), options)).resolves.toBeTruthy();
      await expect(jwtVerify(token, wellKnownJwks(app.id), options)).resolves.toBeTruthy();
      expect((await me(app, token)).status).toBe(200);
    }
  });

  it('concurrent rotations leave one active key; every key handed out is published and signs', async () => {
    const { app, tokens } = await signedInApp();
    const results = await Promise.all(
      Array.from({ length: 5 }, () => app.rest('POST', `/v1/applications/${app.id}/signing-keys/rotate`)),
    );
    for (const res of results) expect([200, 409], JSON.stringify(res.body)).toContain(res.status);
    const handedOut = results.filter((r) => r.status === 200).map((r) => r.body.data.kid as string);
    expect(handedOut.length).toBeGreaterThanOrEqual(1);
    const active = await sql(suite.server, `select id from signing_keys where application_id = ? and status = 'active'`, [
      app.id,
    ]);
    expect(active).toHaveLength(1);
    const published = (await rawRequest(suite.server.url, 'GET', `/v1/applications/${app.id}/jwks.json`)).body.keys.map(
      (k: { kid: string }) => k.kid,
    );
    for (const kid of [...handedOut, decodeProtectedHeader(tokens.access_token).kid]) expect(published).toContain(kid);
    const next = await endUser<Tokens>(app, 'POST', '/v1/auth/token/refresh', { refresh_token: tokens.refresh_token });
    expect(next.status).toBe(200);
    expect(decodeProtectedHeader(next.body.data.access_token).kid).toBe(active[0].id);
    expect((await me(app, next.body.data.access_token)).status).toBe(200);
    expect((await me(app, tokens.access_token)).status).toBe(200);
  });

  it('is tenant-scoped: another application’s id is 404 on rotate, an unknown application has no JWKS', async () => {
    const a = await suite.server.createApp();
    const b = await suite.server.createApp();
    const jwksOf = async (id: string) =>
      (await rawRequest(suite.server.url, 'GET', `/v1/applications/${id}/jwks.json`)).body.keys.map(
        (k: { kid: string }) => k.kid,
      );
    const aKids = await jwksOf(a.id);
    const bKids = await jwksOf(b.id);
    expect(aKids).toHaveLength(1);
    expect(bKids).toHaveLength(1);
    expect(aKids[0]).not.toBe(bKids[0]);

    // A's key rotating B's keys (B's id in the path): 404, and B's key set is untouched.
    expectError(await a.rest('POST', `/v1/applications/${b.id}/signing-keys/rotate`), 404, 'not_found', 'rotate other app');
    expectError(await a.rest('POST', `/v1/applications/${UNKNOWN_ID}/signing-keys/rotate`), 404, 'not_found', 'rotate unknown');
    expect(await jwksOf(b.id)).toEqual(bKids);
    expect(await jwksOf(a.id)).toEqual(aKids);

    // Rotation is a management operation: it needs a secret key with settings:write.
    expectError(
      await a.rest('POST', `/v1/applications/${a.id}/signing-keys/rotate`, undefined, { authorization: undefined }),
      401,
      'missing_credentials',
    );
    const reader = await a.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['settings:read'] });
    expect(reader.status, JSON.stringify(reader.body)).toBe(201);
    expectError(
      await a.rest('POST', `/v1/applications/${a.id}/signing-keys/rotate`, undefined, {
        authorization: `Bearer ${reader.body.data.secret}`,
      }),
      403,
      'insufficient_scope',
    );
    expect(await jwksOf(a.id)).toEqual(aKids);

    // JWKS of an application that does not exist.
    expectError(
      await rawRequest(suite.server.url, 'GET', `/v1/applications/${UNKNOWN_ID}/jwks.json`),
      404,
      'not_found',
      'unknown',
    );
    const unresolved = await rawRequest(suite.server.url, 'GET', '/v1/.well-known/jwks.json', {
      headers: { 'x-application-id': UNKNOWN_ID },
    });
    expectError(unresolved, 401, 'application_not_resolved', 'well-known unknown');
    expectError(
      await rawRequest(suite.server.url, 'GET', '/v1/.well-known/jwks.json'),
      401,
      'application_not_resolved',
      'no header',
    );
  });

  it('keeps private keys sealed at rest (never a PEM or a `d` in the database)', async () => {
    const app = await suite.server.createApp();
    const rows = await sql<{ id: string; public_jwk: unknown; private_key_sealed: string }>(
      suite.server,
      'select id, public_jwk, private_key_sealed from signing_keys where application_id = ?',
      [app.id],
    );
    expect(rows).toHaveLength(1);
    const row = rows[0]!;
    expect(row.private_key_sealed).not.toMatch(/PRIVATE KEY|BEGIN/);
    const jwk = typeof row.public_jwk === 'string' ? JSON.parse(row.public_jwk) : row.public_jwk;
    expect(jwk).not.toHaveProperty('d');
    // Sealed with the master key and bound to its kid: another context does not open it.
    const box = new SecretBox(suite.server.masterKey);
    expect(box.decrypt(row.private_key_sealed, `signing_key:${row.id}`)).toMatch(/BEGIN PRIVATE KEY/);
    expect(() => box.decrypt(row.private_key_sealed, 'signing_key:other')).toThrow();
  });
});

describe('access-token attacks on GET /v1/auth/me: every forgery is 401 invalid_token', () => {
  /** Every refusal must be 401 invalid_token with one and the same message: nothing says which part was wrong. */
  async function expectRefused(app: TestApp, token: string, label: string) {
    const res = await me(app, token);
    expectError(res, 401, 'invalid_token', label);
    return res.body.error.message;
  }

  it('control: a token crafted by hand with the real key and the real claims is accepted (so refusals below mean something)', async () => {
    const { app, claims, user } = await signedInApp();
    const { kid, key } = await realSigningKey(app.id);
    const token = craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, { ...claims, iat: now(), exp: now() + 300 }, ed25519(key));
    const res = await me(app, token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.id).toBe(user.id);
  });

  it('refuses alg none and algorithm confusion (HS256 keyed with the public key)', async () => {
    const { app, tokens, claims } = await signedInApp();
    const header = decodeProtectedHeader(tokens.access_token);
    const [, , realSignature] = tokens.access_token.split('.');
    const payload = { ...claims, iat: now(), exp: now() + 300 };
    const messages = new Set<string>();

    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      const unsigned = craft({ ...header, alg }, payload);
      messages.add(await expectRefused(app, unsigned, `alg ${alg}`));
      messages.add(await expectRefused(app, `${unsigned}${realSignature}`, `alg ${alg} with the real signature`));
    }

    // Algorithm confusion: the public key (public knowledge, from the JWKS) used as an HMAC secret, in every form.
    const jwks = (await rawRequest(suite.server.url, 'GET', `/v1/applications/${app.id}/jwks.json`)).body;
    const jwk = jwks.keys[0];
    const publicKey = createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' });
    const secrets: Record<string, Buffer> = {
      'raw x': Buffer.from(jwk.x, 'base64url'),
      'x as text': Buffer.from(jwk.x),
      'SPKI PEM': Buffer.from(publicKey.export({ format: 'pem', type: 'spki' }) as string),
      'SPKI DER': publicKey.export({ format: 'der', type: 'spki' }) as Buffer,
      'JWK JSON': Buffer.from(JSON.stringify(jwk)),
      'JWKS JSON': Buffer.from(JSON.stringify(jwks)),
    };
    for (const [label, secret] of Object.entries(secrets)) {
      for (const alg of ['HS256', 'HS384', 'HS512']) {
        const token = craft({ alg, kid: header.kid, typ: 'at+jwt' }, payload, hs256(secret));
        messages.add(await expectRefused(app, token, `${alg} keyed with ${label}`));
      }
    }
    // The real token still works: the refusals were about the forgeries.
    expect((await me(app, tokens.access_token)).status).toBe(200);
    expect(messages.size).toBe(1);
  });

  it('refuses a foreign kid, no kid, and an attacker key under the real kid', async () => {
    const { app, tokens, claims } = await signedInApp();
    const { kid } = decodeProtectedHeader(tokens.access_token);
    const payload = { ...claims, iat: now(), exp: now() + 300 };
    const attacker = attackerKey();
    const messages = new Set<string>([
      await expectRefused(
        app,
        craft({ alg: 'EdDSA', kid: UNKNOWN_ID, typ: 'at+jwt' }, payload, ed25519(attacker)),
        'foreign kid',
      ),
      await expectRefused(
        app,
        craft({ alg: 'EdDSA', kid: 'x'.repeat(64), typ: 'at+jwt' }, payload, ed25519(attacker)),
        'odd kid',
      ),
      await expectRefused(app, craft({ alg: 'EdDSA', typ: 'at+jwt' }, payload, ed25519(attacker)), 'no kid'),
      await expectRefused(app, craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, payload, ed25519(attacker)), 'attacker key, real kid'),
      await expectRefused(
        app,
        craft({ alg: 'EdDSA', kid, typ: 'at+jwt' }, { ...payload, sub: 'x' }, ed25519(attacker)),
        'attacker key, bogus sub',
      ),
    ]);
    expect(messages.size).toBe(1);
  });

  it('ignores jwk, jku and x5u headers: an embedded or remote attacker key is never used, never fetched', async () => {
    const { app, tokens, claims } = await signedInApp();
    const { kid } = decodeProtectedHeader(tokens.access_token);
    const payload = { ...claims, iat: now(), exp: now() + 300 };
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const attackerJwk = { ...(publicKey.export({ format: 'jwk' }) as Record<string, string>), kid, alg: 'EdDSA', use: 'sig' };

    // The attacker's own JWKS server: the service must never call it.
    const hits: string[] = [];
    const attackerServer: Server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ keys: [attackerJwk] }));
    });
    await new Promise<void>((resolve) => attackerServer.listen(0, '127.0.0.1', resolve));
    const attackerUrl = `http://127.0.0.1:${(attackerServer.address() as AddressInfo).port}`;
    try {
      const sign = ed25519(privateKey);
      const headers: Array<[string, Record<string, unknown>]> = [
        ['jwk, no kid', { alg: 'EdDSA', typ: 'at+jwt', jwk: attackerJwk }],
        ['jwk with the real kid', { alg: 'EdDSA', typ: 'at+jwt', kid, jwk: attackerJwk }],
        ['jku, no kid', { alg: 'EdDSA', typ: 'at+jwt', jku: `${attackerUrl}/jwks.json` }],
        ['jku with the real kid', { alg: 'EdDSA', typ: 'at+jwt', kid, jku: `${attackerUrl}/jwks.json` }],
        ['x5u with the real kid', { alg: 'EdDSA', typ: 'at+jwt', kid, x5u: `${attackerUrl}/cert.pem` }],
        ['jwk + jku', { alg: 'EdDSA', typ: 'at+jwt', kid, jwk: attackerJwk, jku: `${attackerUrl}/jwks.json` }],
      ];
      for (const [label, header] of headers) await expectRefused(app, craft(header, payload, sign), label);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(hits).toEqual([]);
    } finally {
      await new Promise<void>((resolve) => attackerServer.close(() => resolve()));
    }
  });

  it('refuses tampered claims (sub, aal, sid, exp) under the original signature', async () => {
    const { app, tokens, claims } = await signedInApp();
    const other = await signIn(suite.server, suite.smtp, app, 'mallory@example.com');
    const [header, , signature] = tokens.access_token.split('.');
    const tampered = (changes: Record<string, unknown>) => `${header}.${b64url({ ...claims, ...changes })}.${signature}`;
    await expectRefused(app, tampered({ sub: other.user.id }), 'sub');
    await expectRefused(app, tampered({ aal: 2 }), 'aal');
    await expectRefused(app, tampered({ sid: other.tokens.session_id }), 'sid');
    await expectRefused(app, tampered({ exp: (claims.exp as number) + 3600 }), 'exp');
    await expectRefused(app, tampered({ org: UNKNOWN_ID, org_role: 'owner' }), 'org');
    // The untouched token still works.
    expect((await me(app, tokens.access_token)).status).toBe(200);
  });

  it('checks exp, nbf, iss, aud, typ and the session binding even on tokens signed with the real key', async () => {
    const { app, tokens, claims } = await signedInApp();
    const other = await signIn(suite.server, suite.smtp, app, 'mallory@example.com');
    const otherApp = await suite.server.createApp();
    const { kid, key } = await realSigningKey(app.id);
    const sign = ed25519(key);
    const header = { alg: 'EdDSA', kid, typ: 'at+jwt' };
    const base: JWTPayload = { ...claims, iat: now() - 10, exp: now() + 300 };
    const without = (name: string) => Object.fromEntries(Object.entries(base).filter(([k]) => k !== name));

    const cases: Array<[string, Record<string, unknown>, Record<string, unknown>]> = [
      ['expired', header, { ...base, iat: now() - 700, exp: now() - 100 }],
      ['expired a second ago', header, { ...base, iat: now() - 601, exp: now() - 1 }],
      ['nbf in the future', header, { ...base, nbf: now() + 3600 }],
      ['no exp', header, without('exp')],
      ['exp not a number', header, { ...base, exp: String(now() + 300) }],
      ['foreign issuer', header, { ...base, iss: 'https://evil.example' }],
      ['no issuer', header, without('iss')],
      ['audience of another application', header, { ...base, aud: otherApp.id }],
      ['no audience', header, without('aud')],
      ['typ JWT', { ...header, typ: 'JWT' }, base],
      ['no typ', { alg: 'EdDSA', kid }, base],
      ['no sid', header, without('sid')],
      ['no sub', header, without('sub')],
      ['aal not a number', header, { ...base, aal: '2' }],
      ['sub of another user with this sid', header, { ...base, sub: other.user.id }],
      ['sid of a session of another user', header, { ...base, sid: other.tokens.session_id }],
      ['sid of no session', header, { ...base, sid: UNKNOWN_ID }],
    ];
    for (const [label, h, p] of cases) await expectRefused(app, craft(h, p, sign), label);
    // Control: the same machinery with the base claims passes, and the real token still works.
    expect((await me(app, craft(header, base, sign))).status).toBe(200);
    expect((await me(app, tokens.access_token)).status).toBe(200);
  });

  it('refuses another application’s tokens and keys', async () => {
    const a = await signedInApp('ada@example.com');
    const b = await signedInApp('ada@example.com');
    // B's genuine token presented to A (A's x-application-id), and A's to B.
    await expectRefused(a.app, b.tokens.access_token, "B's token at A");
    await expectRefused(b.app, a.tokens.access_token, "A's token at B");

    // B's real key, with the audience, subject and session rewritten to A's: A's key set alone must decide.
    const bKey = await realSigningKey(b.app.id);
    const aKid = decodeProtectedHeader(a.tokens.access_token).kid;
    const forgedClaims = { ...a.claims, iat: now(), exp: now() + 300 };
    await expectRefused(a.app, craft({ alg: 'EdDSA', kid: bKey.kid, typ: 'at+jwt' }, forgedClaims, ed25519(bKey.key)), "B's kid");
    await expectRefused(a.app, craft({ alg: 'EdDSA', kid: aKid, typ: 'at+jwt' }, forgedClaims, ed25519(bKey.key)), "A's kid");

    // Both genuine tokens still work at home.
    expect((await me(a.app, a.tokens.access_token)).status).toBe(200);
    expect((await me(b.app, b.tokens.access_token)).status).toBe(200);
  });

  it('refuses the tokens of a signed-out session at once', async () => {
    const { app, tokens } = await signedInApp();
    expect((await me(app, tokens.access_token)).status).toBe(200);
    const out = await endUser(app, 'POST', '/v1/auth/sign-out', undefined, tokens.access_token);
    expect(out.status).toBe(200);
    expect(out.body.data).toEqual({ id: tokens.session_id, deleted: true });
    await expectRefused(app, tokens.access_token, 'signed out');
    const refresh = await endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: tokens.refresh_token });
    expectError(refresh, 401, 'invalid_token', 'refresh after sign-out');
  });

  it('missing Authorization is 401 missing_credentials; garbage bearers are 401 invalid_token', async () => {
    const { app, tokens } = await signedInApp();
    expectError(await me(app, ''), 401, 'missing_credentials', 'no header');
    const [h, p, s] = tokens.access_token.split('.');
    const garbage: Record<string, string> = {
      garbage: 'Bearer garbage',
      'empty bearer': 'Bearer ',
      'two dots': 'Bearer ..',
      'four segments': `Bearer ${tokens.access_token}.${s}`,
      'header only': `Bearer ${h}`,
      'no signature': `Bearer ${h}.${p}.`,
      'signature not base64url': `Bearer ${h}.${p}.!!!`,
      'payload not JSON': `Bearer ${h}.${b64url('not json')}.${s}`,
      'JSON array payload': `Bearer ${h}.${b64url([1, 2])}.${s}`,
      'Basic scheme': `Basic ${Buffer.from(`user:${tokens.access_token}`).toString('base64')}`,
      'token without scheme': tokens.access_token,
      'two tokens': `Bearer ${tokens.access_token} ${tokens.access_token}`,
      'refresh token as bearer': `Bearer ${tokens.refresh_token}`,
      'secret key as bearer': `Bearer ${app.secretKey}`,
    };
    for (const [label, authorization] of Object.entries(garbage)) {
      expectError(await app.rest('GET', '/v1/auth/me', undefined, { authorization }), 401, 'invalid_token', label);
    }
    // A valid token without x-application-id: the application is resolved first.
    expectError(
      await me(app, tokens.access_token, { 'x-application-id': undefined }),
      401,
      'application_not_resolved',
      'no application',
    );
    expect((await me(app, tokens.access_token)).status).toBe(200);
  });
});

/** A raw HTTP/1.1 request with any Host header (fetch does not let a caller forge Host). */
function forgedHostRequest(path: string, body: unknown, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const url = new URL(suite.server.url);
  const payload = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('Host header attacks (SECURITY 10)', () => {
  it('a forged Host / X-Forwarded-Host changes neither the mailed link nor the token issuer', async () => {
    const app = await suite.server.createApp();
    const forged = {
      host: 'evil.example',
      'x-forwarded-host': 'evil.example',
      'x-forwarded-proto': 'https',
      'x-forwarded-port': '443',
      forwarded: 'host=evil.example;proto=https',
      'x-original-host': 'evil.example',
      'x-host': 'evil.example',
      'x-application-id': app.id,
    };
    const started = await forgedHostRequest('/v1/auth/magic-link/start', { email: 'ada@example.com' }, forged);
    expect(started.status, JSON.stringify(started.body)).toBe(200);
    const mail = await suite.smtp.next('ada@example.com');
    expect(`${mail.html}\n${mail.text}\n${mail.subject}`).not.toMatch(/evil\.example/);
    const link = linkIn(mail);
    expect(link.origin).toBe(BASE_URL);
    expect(link.pathname).toMatch(/^\/a\/[0-9a-f-]{36}\/magic-link$/);

    const verified = await forgedHostRequest('/v1/auth/magic-link/verify', { token: link.searchParams.get('token') }, forged);
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body.data.status).toBe('complete');
    const { access_token } = verified.body.data.tokens;
    expect(decodeJwt(access_token).iss).toBe(BASE_URL);
    await expect(
      jwtVerify(access_token, createRemoteJWKSet(jwksUrl(app.id)), { issuer: BASE_URL, audience: app.id, algorithms: ['EdDSA'] }),
    ).resolves.toBeTruthy();
    // A refresh through a forged Host keeps the configured issuer as well.
    const refreshed = await forgedHostRequest(
      '/v1/auth/token/refresh',
      { refresh_token: verified.body.data.tokens.refresh_token },
      forged,
    );
    expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(200);
    expect(decodeJwt(refreshed.body.data.access_token).iss).toBe(BASE_URL);
  });
});
