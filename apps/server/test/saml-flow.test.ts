import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { createHost, rule } from './helpers/access-rules.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { CALLBACK, complete, counts, createTestIdp, postToAcs, samlApp, start } from './helpers/saml.ts';
import { acrossServers, expectError, ok, sql } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * SAML sign-in end to end over HTTP against a real, independent IdP implementation (samlify in IdP mode, its own
 * key pair): SP-initiated and IdP-initiated, on whichever database the run uses.
 */
const suite = serverSuite({ smtp: false });

describe('SAML sign-in with a real IdP', () => {
  it('SP-initiated: start → IdP → ACS → complete creates the user and signs them in; the second time signs in the same user', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { email_domain: 'acme.test' });
    const email = `jane.${Date.now()}@acme.test`;

    for (const round of [1, 2]) {
      const { redirect_url } = await ok(start(app, { email, redirect_uri: CALLBACK }));
      expect(redirect_url.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true);
      const form = await idp.respond(spMetadata, redirect_url, { email });
      expect(form.acs).toBe(connection.acs_url);
      const acs = await postToAcs(suite.server.url, connection.id, form);
      expect(acs.status, JSON.stringify(acs.body)).toBe(303);
      expect(acs.location!.startsWith(`${CALLBACK}?code=`)).toBe(true);
      const result = await ok(complete(app, acs.code!));
      expect(result.status).toBe('complete');
      if (result.status !== 'complete') throw new Error('unreachable');
      expect(result.user.primary_email).toBe(email);
      expect(result.user.email_verified).toBe(true);
      expect(result.tokens.access_token).toBeTruthy();
      const [session] = await sql(suite.server, 'select amr from sessions where id = ?', [result.tokens.session_id]);
      expect(session.amr).toEqual(['fed']);
      // The code is single use.
      expectError(await complete(app, acs.code!), 401, 'invalid_verification', `round ${round}`);
    }
    const identities = await sql(suite.server, `select kind, subject from identities where application_id = ?`, [app.id]);
    expect(identities).toEqual([{ kind: 'saml', subject: `${connection.id}:${email}` }]);
    expect((await counts(suite.server, app)).users).toBe(1);
    const events = await ok(app.rest('GET', '/v1/events?type=saml_connection.created'));
    expect(events.events).toHaveLength(1);
  });

  it('sso/start may name a host: host access rules decide at complete, and the token carries it as `host`', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { email_domain: 'acme.test' });
    const email = `host.${Date.now()}@acme.test`;
    const host = await createHost(app);
    const signInTo = async (hostId: string) => {
      const { redirect_url } = await ok(start(app, { email, redirect_uri: CALLBACK, host_id: hostId }));
      const acs = await postToAcs(suite.server.url, connection.id, await idp.respond(spMetadata, redirect_url, { email }));
      expect(acs.status, JSON.stringify(acs.body)).toBe(303);
      return complete(app, acs.code!);
    };
    // No rule allows anyone on the host: refused, and the first sign-in creates no user.
    expectError(await signInTo(host.id), 403, 'access_denied');
    expect((await counts(suite.server, app)).users).toBe(0);

    const user = await ok(app.rest('POST', '/v1/users', { primary_email: email }), 201);
    await rule(app, 'allow', ['user', user.id], ['host', host.id]);
    const result = await ok(signInTo(host.id));
    if (result.status !== 'complete') throw new Error(`expected a complete sign-in, got ${result.status}`);
    expect(decodeJwt(result.tokens.access_token)).toMatchObject({ sub: user.id, host: host.id });
  });

  it('finds the connection by id as well, and refuses a redirect_uri off the allowed origins (422 invalid_url)', async () => {
    const idp = await createTestIdp();
    const { app, connection } = await samlApp(suite.server, idp);
    await ok(start(app, { connection_id: connection.id, redirect_uri: CALLBACK }));
    expectError(await start(app, { connection_id: connection.id, redirect_uri: 'https://evil.example/cb' }), 422, 'invalid_url');
    expectError(await start(app, { connection_id: connection.id, redirect_uri: 'javascript:alert(1)' }), 422, 'invalid_url');
    expectError(await start(app, { email: 'a@nowhere.test', redirect_uri: CALLBACK }), 404, 'not_found');
    expectError(await start(app, { redirect_uri: CALLBACK }), 422, 'validation_failed');
  });

  it('IdP-initiated: refused unless the connection allows it; then lands on the RelayState URL of an allowed origin', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { email_domain: 'acme.test' });
    const email = `idp.${Date.now()}@acme.test`;
    const before = await counts(suite.server, app);
    const refused = await postToAcs(suite.server.url, connection.id, await idp.respond(spMetadata, null, { email }, CALLBACK));
    expect(refused.status).toBe(303);
    expect(refused.code).toBeNull();
    expect(refused.error).toBe('access_denied');
    expect(await counts(suite.server, app)).toEqual(before);

    const updated = await ok(
      app.rest('PATCH', `/v1/saml/connections/${connection.id}`, {
        name: connection.name,
        idp_entity_id: idp.entityId,
        idp_sso_url: idp.ssoUrl,
        idp_certificate: idp.keys.certificate,
        allow_idp_initiated: true,
      }),
    );
    expect(updated.allow_idp_initiated).toBe(true);
    const accepted = await postToAcs(suite.server.url, connection.id, await idp.respond(spMetadata, null, { email }, CALLBACK));
    expect(accepted.location!.startsWith(`${CALLBACK}?code=`)).toBe(true);
    const result = await ok(complete(app, accepted.code!));
    expect(result.status).toBe('complete');
  });

  it('links the existing account of a vouched-for domain on the first SAML sign-in', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { email_domain: 'acme.test' });
    const email = `existing.${Date.now()}@acme.test`;
    const user = await ok(app.rest('POST', '/v1/users', { primary_email: email }), 201);
    const { redirect_url } = await ok(start(app, { email, redirect_uri: CALLBACK }));
    const acs = await postToAcs(suite.server.url, connection.id, await idp.respond(spMetadata, redirect_url, { email }));
    const result = await ok(complete(app, acs.code!));
    if (result.status !== 'complete') throw new Error(`expected complete, got ${result.status}`);
    expect(result.user.id).toBe(user.id);
    expect(result.user.email_verified).toBe(true);
  });

  it('a code works once, within a minute, for its own application, and not after the connection is disabled', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { email_domain: 'acme.test' });
    const other = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const signInCode = async () => {
      const { redirect_url } = await ok(start(app, { connection_id: connection.id, redirect_uri: CALLBACK }));
      const acs = await postToAcs(
        suite.server.url,
        connection.id,
        await idp.respond(spMetadata, redirect_url, { email: `c.${Date.now()}@acme.test` }),
      );
      return acs.code!;
    };
    const code = await signInCode();
    expectError(await complete(other, code), 401, 'invalid_verification', 'another application');
    await sql(suite.server, "update saml_codes set expires_at = now() - interval '1 second' where connection_id = ?", [
      connection.id,
    ]);
    expectError(await complete(app, code), 401, 'invalid_verification', 'expired');
    const late = await signInCode();
    await ok(app.rest('POST', `/v1/saml/connections/${connection.id}/disable`));
    const before = await counts(suite.server, app);
    expectError(await complete(app, late), 403, 'access_denied', 'disabled after the ACS');
    expect(await counts(suite.server, app)).toEqual(before);
    expectError(await start(app, { connection_id: connection.id, redirect_uri: CALLBACK }), 404, 'not_found');
  });

  it('a connection without a certificate refuses every sign-in', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, {
      idp_certificate: undefined,
      allow_idp_initiated: true,
    });
    expect(connection.certificate_expires_at).toBeNull();
    expectError(await start(app, { connection_id: connection.id, redirect_uri: CALLBACK }), 404, 'not_found');
    const before = await counts(suite.server, app);
    const acs = await postToAcs(
      suite.server.url,
      connection.id,
      await idp.respond(spMetadata, null, { email: 'x@acme.test' }, CALLBACK),
    );
    expect(acs.code).toBeNull();
    expect(acs.error).toBe('access_denied');
    expect(await counts(suite.server, app)).toEqual(before);
  });

  it('a response is accepted once: the same post replayed 20 times at once (two processes on PostgreSQL) yields one code', async () => {
    const idp = await createTestIdp();
    const { app, connection, spMetadata } = await samlApp(suite.server, idp, { allow_idp_initiated: true });
    const form = await idp.respond(spMetadata, null, { email: uniqueEmail('replay') }, CALLBACK);
    const results = await acrossServers(suite.server, 20, (target) => postToAcs(target.url, connection.id, form));
    expect(results.filter((r) => r.code)).toHaveLength(1);
    expect(results.filter((r) => r.error === 'saml_response_invalid')).toHaveLength(19);
    const { redirect_url } = await ok(start(app, { connection_id: connection.id, redirect_uri: CALLBACK }));
    const solicited = await idp.respond(spMetadata, redirect_url, { email: uniqueEmail('race') });
    const raced = await acrossServers(suite.server, 20, (target) => postToAcs(target.url, connection.id, solicited));
    expect(raced.filter((r) => r.code)).toHaveLength(1);
  });
});
