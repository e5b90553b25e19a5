import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

let app: TestApp;
let doc: any;

beforeAll(async () => {
  app = await suite.server.createApp();
  doc = (await rawRequest(suite.server.url, 'GET', '/v1/openapi.json')).body;
});

/** The seed's endpoints that exist so far (seed-api.md numbering). */
const SEED_ROUTES = [
  ['post', '/v1/api-keys', '201'], // S1
  ['post', '/v1/organizations/{id}/members', '201'], // S8
  ['get', '/v1/organizations', '200'], // S10
  ['get', '/v1/authz/relations', '200'], // S11
  ['post', '/v1/users', '201'], // S12
  ['post', '/v1/users/merge', '200'], // S20
] as const;

/** The component a `$ref` names (the schema itself when it is not a reference). */
const component = (schema: any) => (schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema);

describe('/v1/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document (not enveloped)', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const validator = new Validator();
    const result = await validator.validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('describes every seed route of this build with its success status and envelope', () => {
    for (const [method, path, status] of SEED_ROUTES) {
      const operation = doc.paths[path]?.[method];
      expect(operation, `${method} ${path}`).toBeDefined();
      const schema = component(operation.responses[status].content['application/json'].schema);
      expect(schema.required).toEqual(['success', 'data', 'error', 'meta']);
      expect(operation.responses['422']).toBeDefined();
    }
    // A create takes only the optional Idempotency-Key header: nothing else outside its body.
    expect(doc.paths['/v1/users'].post.parameters.map((p: { name: string; in: string }) => [p.in, p.name])).toEqual([
      ['header', 'Idempotency-Key'],
    ]);
    expect(doc.paths['/v1/users'].post.security).toEqual([{ secretKey: [], applicationId: [] }]);
    expect(doc.paths['/v1/applications'].post.security).toEqual([{ operatorToken: [] }]);
    expect(doc.paths['/v1/users'].post['x-required-scope']).toBe('users:write');
  });

  it("describes what the wire carries: live responses validate against the document's schemas", async () => {
    // Structure, not string formats: the zod output schemas already check those on the way out.
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
    const check = (method: string, path: string, status: number, body: unknown) => {
      const response = doc.paths[path][method].responses[String(status)];
      const resolved = response.$ref ? doc.components.responses[response.$ref.split('/').pop()] : response;
      const schema = JSON.parse(
        JSON.stringify(resolved.content['application/json'].schema).replaceAll('"#/components', '"doc#/components'),
      );
      const validate = ajv.compile(schema);
      expect(validate(body), `${method} ${path} ${status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };
    const user = await app.rest('POST', '/v1/users', { primary_email: 'doc@example.com' });
    check('post', '/v1/users', 201, user.body);
    const org = await app.rest('POST', '/v1/organizations', { name: 'Doc Org' });
    check('post', '/v1/organizations', 201, org.body);
    const member = await app.rest('POST', `/v1/organizations/${org.body.data.id}/members`, { user_id: user.body.data.id });
    check('post', '/v1/organizations/{id}/members', 201, member.body);
    check('get', '/v1/organizations', 200, (await app.rest('GET', '/v1/organizations')).body);
    check('get', '/v1/users', 200, (await app.rest('GET', '/v1/users')).body);
    check('get', '/v1/events', 200, (await app.rest('GET', '/v1/events')).body);
    check('get', '/v1/api-keys', 200, (await app.rest('GET', '/v1/api-keys')).body);
    const key = await app.rest('POST', '/v1/api-keys', { name: 'doc', scopes: ['users:read'] });
    check('post', '/v1/api-keys', 201, key.body);
    check('delete', '/v1/api-keys/{id}', 200, (await app.rest('DELETE', `/v1/api-keys/${key.body.data.id}`)).body);
    const other = await app.rest('POST', '/v1/users', {});
    check(
      'post',
      '/v1/users/merge',
      200,
      (await app.rest('POST', '/v1/users/merge', { source_user_id: other.body.data.id, target_user_id: user.body.data.id })).body,
    );
    const invalid = await app.rest('POST', '/v1/users', { primary_email: 1 });
    check('post', '/v1/users', 422, invalid.body);
    check('post', '/v1/users', 409, (await app.rest('POST', '/v1/users', { primary_email: 'doc@example.com' })).body);
    check('get', '/v1/applications/{id}', 200, (await app.rest('GET', `/v1/applications/${app.id}`)).body);
  });

  it('serves client generators: tags with descriptions, servers from the base URL, a license, examples that validate', () => {
    // The configured base URL (GATEHOUSE_BASE_URL), never the Host the request came to.
    expect(doc.servers).toEqual([{ url: 'http://gatehouse.test' }]);
    expect(doc.info.license.identifier).toBeTruthy();
    const described = new Map((doc.tags as Array<{ name: string; description: string }>).map((t) => [t.name, t.description]));
    const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
    ajv.addSchema({ $id: 'doc', components: doc.components }, 'doc');
    const validates = (schema: unknown, example: unknown) =>
      ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components', '"doc#/components')))(example);
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        for (const tag of operation.tags) expect(described.get(tag), `tag ${tag}`).toBeTruthy();
        // Every body of every media type (the SAML routes speak form posts and XML); a 303 redirect has no body.
        const responses = Object.entries<any>(operation.responses)
          .filter(([status]) => status !== '303')
          .map(([, response]) => response);
        const bodies = [operation.requestBody, ...responses]
          .filter((b) => b && !b.$ref)
          .flatMap((b) => Object.values<any>(b.content));
        for (const body of bodies) {
          expect(body.example, `${method} ${path}`).toBeDefined();
          expect(validates(body.schema, body.example), `${method} ${path} example`).toBe(true);
        }
      }
    }
    for (const response of Object.values<any>(doc.components.responses)) {
      const body = response.content['application/json'];
      expect(validates(body.schema, body.example)).toBe(true);
    }
  });

  it('names every envelope as a component: no operation carries an inline one (a generated client gets named types)', () => {
    const isEnvelope = (schema: any) => Boolean(schema?.properties?.success);
    let enveloped = 0;
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const [method, operation] of Object.entries<any>(item)) {
        for (const [status, response] of Object.entries<any>(operation.responses)) {
          const schema = response.content?.['application/json']?.schema;
          if (!schema) continue;
          expect(isEnvelope(schema), `${method} ${path} ${status}: inline envelope`).toBe(false);
          if (!isEnvelope(component(schema))) continue;
          enveloped++;
          expect(schema.$ref, `${method} ${path} ${status}`).toMatch(/^#\/components\/schemas\/\w+Envelope$/);
          // The data too is named: a component, or a list of one.
          const data = component(schema).properties.data;
          if (data.type !== 'null') expect(data.$ref ?? data.items?.$ref, `${method} ${path} ${status} data`).toBeDefined();
        }
      }
    }
    expect(enveloped).toBeGreaterThan(100);
    expect(doc.paths['/v1/users'].post.responses['201'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/UserEnvelope',
    });
    expect(doc.components.schemas.UserEnvelope.properties).toMatchObject({
      data: { $ref: '#/components/schemas/User' },
      meta: { $ref: '#/components/schemas/ResponseMeta' },
    });
    expect(doc.paths['/v1/api-keys'].get.responses['200'].content['application/json'].schema.$ref).toBe(
      '#/components/schemas/ApiKeyListEnvelope',
    );
  });

  it("`npm run openapi -- <file>` writes the same document, from a shell whose `node` is the machine's (Node 20)", async () => {
    const root = fileURLToPath(new URL('../../..', import.meta.url));
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-openapi-'));
    try {
      // Without the project's node_modules/.bin on PATH, as a newcomer's shell is: npm brings the project's Node 24.
      const PATH = (process.env.PATH ?? '')
        .split(':')
        .filter((entry) => !entry.includes('node_modules'))
        .join(':');
      const file = join(dir, 'openapi.json');
      await promisify(execFile)('npm', ['run', 'openapi', '--silent', '--', file, 'http://gatehouse.test'], {
        cwd: root,
        env: { PATH, HOME: process.env.HOME ?? dir },
      });
      expect(JSON.parse(await readFile(file, 'utf8'))).toEqual(doc);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // A second Node process loads the whole router: seconds on an idle machine, more on a busy one.
  }, 180_000);

  it('lists 429 on the rate-limited routes only', () => {
    expect(doc.paths['/v1/auth/magic-link/start'].post.responses['429']).toBeDefined();
    expect(doc.paths['/v1/auth/mfa/totp/verify'].post.responses['429']).toBeDefined();
    expect(doc.paths['/v1/auth/passkeys/mfa/finish'].post.responses['429']).toBeDefined();
    expect(doc.paths['/v1/users'].post.responses['429']).toBeUndefined();
  });

  it('names every error code the service can answer', () => {
    const codes = doc.components.schemas.Error.properties.code.enum as string[];
    for (const code of [
      'invalid_json',
      'validation_failed',
      'not_found',
      'email_taken',
      'already_member',
      'insufficient_scope',
      'depth_limit_exceeded',
      'no_second_factor',
      'internal_error',
    ]) {
      expect(codes).toContain(code);
    }
  });
});
