import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestIdp, makeKeyPair, type TestIdp } from './helpers/saml.ts';
import { expectError, isoDate, MISSING, ok, rawRequest, startServer, type TestServer, UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/** SAML connections: S2 word for word, the record, certificate parsing, metadata import (SSRF guard), SP metadata. */
const suite = serverSuite({ smtp: false });

let idp: TestIdp;
beforeAll(async () => {
  idp = await createTestIdp();
});

const body = (overrides: Record<string, unknown> = {}) => ({
  name: 'Acme Corp',
  idp_entity_id: idp.entityId,
  idp_sso_url: idp.ssoUrl,
  idp_certificate: idp.keys.certificate,
  ...overrides,
});

/** A PKCS#12 (PFX) structure, DER: version 3 and an empty data ContentInfo — a keystore, not a certificate. */
const PKCS12 = Buffer.from('3016020103301106092a864886f70d010701a0040402' + '3000', 'hex').toString('base64');

describe('SAML connections (secret key)', () => {
  it('creates (201), lists, gets, updates with the S2 body, and deletes — never echoing the certificate', async () => {
    const app = await suite.server.createApp();
    const create = await app.rest('POST', '/v1/saml/connections', body({ email_domain: 'Acme.Test' }));
    const created = await ok(create, 201);
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      name: 'Acme Corp',
      enabled: true,
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      email_attribute: null,
      email_domain: 'acme.test',
      name_attribute: null,
      allow_idp_initiated: false,
      organization_id: null,
      acs_url: `http://gatehouse.test/v1/saml/acs/${created.id}`,
      metadata_url: `http://gatehouse.test/v1/saml/metadata/${created.id}`,
      certificate_expires_at: isoDate,
      created_at: isoDate,
      updated_at: isoDate,
    });
    expect(new Date(created.certificate_expires_at).getTime()).toBeGreaterThan(Date.now() + 300 * 86_400_000);
    expect(await ok(app.rest('GET', '/v1/saml/connections'))).toEqual([created]);
    expect(await ok(app.rest('GET', `/v1/saml/connections/${created.id}`))).toEqual(created);

    const other = await makeKeyPair();
    const patch = await app.rest('PATCH', `/v1/saml/connections/${created.id}`, {
      idp_certificate: other.certificate,
      idp_entity_id: 'https://idp.acme.test/new',
      idp_sso_url: 'https://idp.acme.test/sso',
      name: 'Acme',
      email_attribute: 'mail',
      enabled: false,
      name_attribute: 'displayName',
    });
    const updated = await ok(patch);
    expect(updated).toMatchObject({
      id: created.id,
      name: 'Acme',
      enabled: false,
      idp_entity_id: 'https://idp.acme.test/new',
      idp_sso_url: 'https://idp.acme.test/sso',
      email_attribute: 'mail',
      email_domain: 'acme.test',
      name_attribute: 'displayName',
    });
    const events = await ok(app.rest('GET', '/v1/events'));
    expect(events.events.map((e: { type: string }) => e.type).slice(0, 2)).toEqual([
      'saml_connection.updated',
      'saml_connection.created',
    ]);
    for (const text of [JSON.stringify(create.body), JSON.stringify(patch.body), JSON.stringify(events)]) {
      expect(text).not.toContain(idp.keys.certificate.slice(0, 40));
      expect(text).not.toContain(other.certificate.slice(0, 40));
      expect(text).not.toContain('idp_certificate');
    }
    expect(await ok(app.rest('DELETE', `/v1/saml/connections/${created.id}`))).toEqual({ id: created.id, deleted: true });
    expectError(await app.rest('GET', `/v1/saml/connections/${created.id}`), 404, 'not_found');
    expect((await rawRequest(suite.server.url, 'GET', `/v1/saml/metadata/${created.id}`)).status).toBe(404);
    const deleted = await ok(app.rest('GET', '/v1/events?type=saml_connection.deleted'));
    expect(deleted.events).toHaveLength(1);
  });

  it("belongs to an organization of the application, or to none; another application's organization is 422", async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const org = await ok(app.rest('POST', '/v1/organizations', { name: 'Acme' }), 201);
    const foreign = await ok(other.rest('POST', '/v1/organizations', { name: 'Elsewhere' }), 201);
    const created = await ok(app.rest('POST', '/v1/saml/connections', body({ organization_id: org.id })), 201);
    expect(created.organization_id).toBe(org.id);
    const refused = await app.rest('POST', '/v1/saml/connections', body({ organization_id: foreign.id }));
    expectError(refused, 422, 'validation_failed');
    expect(refused.body.error.details).toEqual([{ path: 'organization_id', message: expect.any(String) }]);
    const patch = body({ organization_id: null });
    expect((await ok(app.rest('PATCH', `/v1/saml/connections/${created.id}`, patch))).organization_id).toBeNull();
    await ok(app.rest('PATCH', `/v1/saml/connections/${created.id}`, body({ organization_id: org.id })));
    await ok(app.rest('DELETE', `/v1/organizations/${org.id}`));
    expect((await ok(app.rest('GET', `/v1/saml/connections/${created.id}`))).organization_id).toBeNull();
  });

  it('S2 refuses what is not a base64 DER X.509 certificate with 422 validation_failed', async () => {
    const app = await suite.server.createApp();
    const { id } = await ok(app.rest('POST', '/v1/saml/connections', body()), 201);
    const keys = await makeKeyPair();
    const privateKeyDer = keys.privateKeyPem.replace(/-----[^-]+-----|\s/g, '');
    const cases: Record<string, string> = {
      'not base64': 'this is not base64!',
      PEM: keys.certificatePem,
      'random bytes': Buffer.from(Array.from({ length: 600 }, (_, i) => (i * 7919) % 256)).toString('base64'),
      'private key': privateKeyDer,
      PKCS12,
      'certificate with trailing bytes': Buffer.concat([Buffer.from(keys.certificate, 'base64'), Buffer.from([0])]).toString(
        'base64',
      ),
      '1 MB': 'A'.repeat(1_000_000),
      empty: '',
    };
    for (const [label, certificate] of Object.entries(cases)) {
      const res = await app.rest('PATCH', `/v1/saml/connections/${id}`, body({ idp_certificate: certificate }));
      expectError(res, 422, 'validation_failed', label);
      expect(res.body.error.details?.[0]?.path, label).toBe('idp_certificate');
      expectError(
        await app.rest('POST', '/v1/saml/connections', body({ idp_certificate: certificate })),
        422,
        'validation_failed',
        label,
      );
    }
    const weak = await makeKeyPair(1024);
    expectError(
      await app.rest('PATCH', `/v1/saml/connections/${id}`, body({ idp_certificate: weak.certificate })),
      422,
      'validation_failed',
      'RSA-1024',
    );
  });

  it('S2 refuses javascript:, http: and loopback SSO URLs (422 invalid_url), unknown fields and missing required ones (422)', async () => {
    const app = await suite.server.createApp();
    const { id } = await ok(app.rest('POST', '/v1/saml/connections', body()), 201);
    for (const url of [
      'javascript:alert(1)',
      'http://idp.acme.test/sso',
      'https://localhost/sso',
      'https://127.0.0.1/sso',
      'not a url',
    ]) {
      expectError(await app.rest('PATCH', `/v1/saml/connections/${id}`, body({ idp_sso_url: url })), 422, 'invalid_url', url);
      expectError(await app.rest('POST', '/v1/saml/connections', body({ idp_sso_url: url })), 422, 'invalid_url', url);
    }
    for (const extra of [
      { application_id: MISSING },
      { acs_url: 'https://evil.example/acs' },
      { created_at: '2020-01-01T00:00:00Z' },
    ]) {
      expectError(
        await app.rest('PATCH', `/v1/saml/connections/${id}`, body(extra)),
        422,
        'validation_failed',
        JSON.stringify(extra),
      );
    }
    expectError(
      await app.rest('PATCH', `/v1/saml/connections/${id}`, body({ id: MISSING })),
      422,
      'validation_failed',
      'id in body',
    );
    for (const field of ['idp_certificate', 'idp_entity_id', 'idp_sso_url', 'name']) {
      const rest: Record<string, unknown> = body();
      delete rest[field];
      expectError(await app.rest('PATCH', `/v1/saml/connections/${id}`, rest), 422, 'validation_failed', `without ${field}`);
    }
    expectError(
      await app.rest('PATCH', `/v1/saml/connections/${id}`, body({ enabled: 'true' })),
      422,
      'validation_failed',
      'coercion',
    );
  });

  it("another application's connection is 404 everywhere; scopes are enforced", async () => {
    const mine = await suite.server.createApp();
    const theirs = await suite.server.createApp();
    const { id } = await ok(theirs.rest('POST', '/v1/saml/connections', body()), 201);
    expectError(await mine.rest('GET', `/v1/saml/connections/${id}`), 404, 'not_found');
    expectError(await mine.rest('PATCH', `/v1/saml/connections/${id}`, body()), 404, 'not_found');
    expectError(await mine.rest('POST', `/v1/saml/connections/${id}/disable`), 404, 'not_found');
    expectError(await mine.rest('DELETE', `/v1/saml/connections/${id}`), 404, 'not_found');
    expectError(await mine.rest('PATCH', `/v1/saml/connections/${MISSING}`, body()), 404, 'not_found');
    expect(await ok(mine.rest('GET', '/v1/saml/connections'))).toEqual([]);
    expect((await ok(theirs.rest('GET', `/v1/saml/connections/${id}`))).enabled).toBe(true);

    const readOnly = await ok(mine.rest('POST', '/v1/api-keys', { name: 'reader', scopes: ['saml:read'] }), 201);
    const headers = { authorization: `Bearer ${readOnly.secret}` };
    expect((await mine.rest('GET', '/v1/saml/connections', undefined, headers)).status).toBe(200);
    expectError(await mine.rest('POST', '/v1/saml/connections', body(), headers), 403, 'insufficient_scope');
  });

  it('one connection per email domain in an application (409)', async () => {
    const app = await suite.server.createApp();
    await ok(app.rest('POST', '/v1/saml/connections', body({ email_domain: 'acme.test' })), 201);
    expectError(await app.rest('POST', '/v1/saml/connections', body({ email_domain: 'ACME.test' })), 409, 'conflict');
  });

  it('creates a connection from IdP metadata XML, and refuses metadata with a DOCTYPE or without a usable certificate', async () => {
    const app = await suite.server.createApp();
    const created = await ok(
      app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_xml: idp.metadataXml, email_domain: 'acme.test' }),
      201,
    );
    expect(created).toMatchObject({ name: idp.entityId, idp_entity_id: idp.entityId, idp_sso_url: idp.ssoUrl, enabled: true });
    expect(created.certificate_expires_at).toEqual(isoDate);
    const doctype = `<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>${idp.metadataXml.replace(/^<\?xml[^>]*\?>/, '')}`;
    expectError(
      await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_xml: doctype }),
      422,
      'validation_failed',
    );
    const certless = idp.metadataXml.replace(/<(\w+:)?KeyDescriptor[\s\S]*<\/(\w+:)?KeyDescriptor>/, '');
    expectError(
      await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_xml: certless }),
      422,
      'validation_failed',
    );
    expectError(
      await app.rest('POST', '/v1/saml/connections/from-metadata', {
        metadata_xml: idp.metadataXml,
        metadata_url: 'https://x.test/m',
      }),
      422,
      'validation_failed',
    );
  });

  it('metadata that is a PEM certificate is 422 saying so, and where a certificate goes instead; nothing is created', async () => {
    const app = await suite.server.createApp();
    const refused = await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_xml: idp.keys.certificatePem });
    expectError(refused, 422, 'validation_failed');
    expect(refused.body.error.message).toContain('looks like a PEM certificate, not SAML metadata XML');
    expect(refused.body.error.details).toEqual([{ path: 'metadata_xml', message: expect.stringContaining('idp_certificate') }]);
    expect(refused.body.error.message).not.toMatch(/XML: |not well-formed/);
    expect(await ok(app.rest('GET', '/v1/saml/connections'))).toEqual([]);
  });

  it('serves our SP metadata (entity id, ACS by HTTP-POST, NameID formats, WantAssertionsSigned), public and not enveloped', async () => {
    const app = await suite.server.createApp();
    const { id, acs_url, metadata_url } = await ok(app.rest('POST', '/v1/saml/connections', body()), 201);
    const res = await fetch(`${suite.server.url}/v1/saml/metadata/${id}`);
    const xml = await res.text();
    expect(xml).toContain(`entityID="${metadata_url}"`);
    expect(xml).toContain(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${acs_url}"`);
    expect(xml).toContain('WantAssertionsSigned="true"');
    expect(xml).toContain('urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress');
    expect((await rawRequest(suite.server.url, 'GET', `/v1/saml/metadata/${MISSING}`)).status).toBe(404);
    expect((await rawRequest(suite.server.url, 'GET', '/v1/saml/metadata/not-a-uuid')).status).toBe(404);
  });

  it('answers 404 to an ACS post for an id that is not a connection id, before it keys the rate limit (PostgreSQL refused a NUL there: 503)', async () => {
    const post = (id: string) =>
      rawRequest(suite.server.url, 'POST', `/v1/saml/acs/${id}`, {
        body: 'SAMLResponse=PHg%2BPC94Pg%3D%3D',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
    for (const id of ['%00', 'A%00B', 'not-a-uuid', 'a'.repeat(90), MISSING]) {
      expectError(await post(id), 404, 'not_found', id.slice(0, 20));
    }
  });
});

describe('metadata URLs go through the SSRF guard', () => {
  let insecure: TestServer;
  let metadataServer: Server;
  let metadataUrl: string;

  beforeAll(async () => {
    insecure = await startServer({ allowInsecureSaml: true });
    metadataServer = createServer((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: '/metadata' }).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/samlmetadata+xml' }).end(idp.metadataXml);
    });
    await new Promise<void>((resolve) => metadataServer.listen(0, '127.0.0.1', resolve));
    const address = metadataServer.address();
    metadataUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });
  afterAll(async () => {
    await insecure?.close();
    await new Promise((resolve) => metadataServer?.close(resolve));
  });

  it('refuses http, loopback, private, link-local and metadata addresses; follows no redirect', async () => {
    const app = await suite.server.createApp();
    for (const url of [
      `${metadataUrl}/metadata`,
      'https://127.0.0.1/metadata',
      'https://10.0.0.1/metadata',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:127.0.0.1]/metadata',
      'https://[::127.0.0.1]/metadata',
      'https://[::1]/metadata',
      'https://localhost/metadata',
      'file:///etc/passwd',
    ]) {
      expectError(await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: url }), 422, 'invalid_url', url);
    }
    const local = await insecure.createApp();
    // GATEHOUSE_ALLOW_INSECURE_SAML adds http and loopback — nothing else.
    for (const url of [`${metadataUrl}/redirect`, 'http://169.254.169.254/latest/meta-data', 'http://10.0.0.1/metadata']) {
      expectError(await local.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: url }), 422, 'invalid_url', url);
    }
    const HINT = 'for local development only, GATEHOUSE_ALLOW_INSECURE_SAML=1 on the server allows it';
    for (const [url, reason] of [
      [`${metadataUrl}/metadata`, `not https; ${HINT}`],
      ['https://127.0.0.1/metadata', `a loopback address; ${HINT}`],
      ['https://10.0.0.1/metadata', 'a private address; no setting allows it'],
    ]) {
      const refused = await app.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: url });
      expect(refused.body.error.message, url).toBe(`The URL is not allowed: ${reason}`);
      expect(refused.body.error.details, url).toEqual([{ path: 'metadata_url', message: reason }]);
    }
    const sso = await app.rest('POST', '/v1/saml/connections', body({ idp_sso_url: 'http://127.0.0.1:9999/sso' }));
    expectError(sso, 422, 'invalid_url');
    expect(sso.body.error.message).toBe(`The URL is not allowed: not https; ${HINT}`);
    const created = await ok(
      local.rest('POST', '/v1/saml/connections/from-metadata', { metadata_url: `${metadataUrl}/metadata` }),
      201,
    );
    expect(created.idp_entity_id).toBe(idp.entityId);
    // The insecure flag also admits an http SSO URL, for a local IdP.
    await ok(local.rest('POST', '/v1/saml/connections', body({ idp_sso_url: 'http://127.0.0.1:9999/sso' })), 201);
  });
});
