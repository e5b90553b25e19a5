import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { MISSING, rawRequest, sql, type TestApp } from './helpers/server.ts';
import { signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * Text PostgreSQL cannot store (U+0000, an unpaired UTF-16 surrogate) sent to every string field of every operation
 * of the OpenAPI document, with the credential the operation takes: each is refused by the schema (422
 * `validation_failed` naming the field) or, in a path, answered 404/422. Never 500, and nothing is created.
 */
const suite = serverSuite();
const ORIGIN = 'https://app.example.com';

type Json = Record<string, any>;
type Key = string | number;
let doc: Json;
let app: TestApp;
let accessToken: string;

beforeAll(async () => {
  doc = (await rawRequest(suite.server.url, 'GET', '/v1/openapi.json')).body;
  app = await suite.server.createApp({ allowed_origins: [ORIGIN] });
  accessToken = (await signIn(suite.server, suite.smtp, app, uniqueEmail('text'))).tokens.access_token;
});

const BAD = { nul: 'A\u0000B', surrogate: 'A\ud800B' } as const;
/** U+0000 in a URL. A lone surrogate has no UTF-8 spelling, so a URL cannot carry one (fastify refuses `%ED%A0%80`). */
const NUL_IN_URL = 'A%00B';

const resolve = (schema: Json): Json =>
  schema?.$ref ? resolve(doc.components.schemas[String(schema.$ref).split('/').pop()!]) : (schema ?? {});

const typesOf = (schema: Json): string[] => (Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []);

const isFreeText = (schema: Json) => typesOf(schema).includes('string') && !schema.enum && schema.const === undefined;

/** A value the schema accepts, for the parts of a body its example leaves out (a union's other branch, an item). */
function sample(input: Json): unknown {
  const schema = resolve(input);
  if (schema.example !== undefined) return schema.example;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  if (schema.default !== undefined) return schema.default;
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants) return sample(variants.find((v: Json) => !typesOf(resolve(v)).includes('null')) ?? variants[0]);
  const [type] = typesOf(schema).filter((t) => t !== 'null');
  if (type === 'object')
    return Object.fromEntries((schema.required ?? []).map((k: string) => [k, sample(schema.properties?.[k] ?? {})]));
  if (type === 'array') return Array.from({ length: schema.minItems ?? 1 }, () => sample(schema.items ?? {}));
  if (type === 'integer' || type === 'number') return schema.minimum ?? 1;
  if (type === 'boolean') return false;
  const formats: Record<string, string> = {
    uuid: MISSING,
    email: 'someone@example.com',
    uri: `${ORIGIN}/callback`,
    'date-time': new Date().toISOString(),
  };
  return formats[schema.format] ?? 'x';
}

const clone = <T>(value: T): T => structuredClone(value);

/**
 * Every way to put `bad` into a body of `schema` whose valid value is `value`: each string field (in objects, arrays,
 * union branches), and each key and value of a free-form object.
 */
function mutations(input: Json, value: unknown, bad: string, path: Key[] = []): Array<{ path: Key[]; value: unknown }> {
  const schema = resolve(input);
  const found: Array<{ path: Key[]; value: unknown }> = [];
  const variants: Json[] | undefined = schema.anyOf ?? schema.oneOf;
  if (variants) {
    for (const variant of variants.map(resolve)) {
      const fits =
        value !== null &&
        typeof value === 'object' &&
        !Array.isArray(value) &&
        typesOf(variant).includes('object') &&
        Object.keys(value).every((k) => k in (variant.properties ?? {}));
      const base = fits || (typeof value === 'string' && isFreeText(variant)) ? value : sample(variant);
      found.push(...mutations(variant, base, bad, path));
    }
    return found;
  }
  if (isFreeText(schema)) found.push({ path, value: bad });
  const types = typesOf(schema);
  if (types.includes('object')) {
    const object = (value && typeof value === 'object' && !Array.isArray(value) ? value : sample(schema)) as Json;
    for (const [key, property] of Object.entries((schema.properties ?? {}) as Json)) {
      const current = key in object ? object[key] : sample(property);
      for (const m of mutations(property, current, bad, [...path, key])) {
        found.push({ path: m.path, value: { ...clone(object), [key]: m.value } });
      }
    }
    const extra = schema.additionalProperties;
    if (extra && typeof extra === 'object') {
      const free = Object.keys(resolve(extra)).length === 0;
      // A free-form object: a bad key, and bad text as a value at the top and nested.
      found.push({ path: [...path, bad], value: { ...clone(object), [bad]: 'x' } });
      if (free) {
        found.push({ path: [...path, 'a'], value: { ...clone(object), a: bad } });
        found.push({ path: [...path, 'a', 'b', 0], value: { ...clone(object), a: { b: [bad] } } });
      } else {
        for (const m of mutations(extra, sample(extra), bad, [...path, 'a'])) {
          found.push({ path: m.path, value: { ...clone(object), a: m.value } });
        }
      }
    }
  }
  if (types.includes('array') && schema.items) {
    const items = Array.isArray(value) && value.length ? value : [sample(schema.items)];
    for (const m of mutations(schema.items, items[0], bad, [...path, 0])) {
      found.push({ path: m.path, value: [m.value, ...clone(items.slice(1))] });
    }
  }
  return found;
}

interface Operation {
  method: string;
  path: string;
  operation: Json;
}

const operations = (): Operation[] =>
  Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    Object.entries(item as Json).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
  );

/** The headers of the credential the operation declares. */
function credential(operation: Json): Record<string, string> {
  const schemes = Object.keys(operation.security?.[0] ?? {});
  const headers: Record<string, string> = { origin: ORIGIN };
  if (schemes.includes('applicationId')) headers['x-application-id'] = app.id;
  if (schemes.includes('operatorToken')) headers.authorization = `Bearer ${suite.server.operatorToken}`;
  if (schemes.includes('secretKey')) headers.authorization = `Bearer ${app.secretKey}`;
  if (schemes.includes('accessToken')) headers.authorization = `Bearer ${accessToken}`;
  return headers;
}

/** A valid value of a path parameter: the test's own application where one is named, else an id of nothing. */
const pathValue = (name: string, path: string) =>
  name === 'id' && path.startsWith('/v1/applications/')
    ? app.id
    : encodeURIComponent(String(sample({ type: 'string', format: 'uuid' })));

function urlOf(op: Operation, override: { name: string; value: string } | undefined, query: Record<string, string>) {
  const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
    name === override?.name ? override.value : pathValue(name, op.path),
  );
  const search = Object.entries(query)
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  return search ? `${path}?${search}` : path;
}

interface Probe {
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** The field the schema must name in a 422, or undefined where 404 or 422 are both right (a path segment). */
  field?: string;
  /**
   * A route outside the procedures (SAML's form post and metadata, the OAuth redirect): no schema answers 422 there,
   * any refusal will do.
   */
  plain: boolean;
}

function probes(op: Operation): Probe[] {
  const headers = credential(op.operation);
  const list: Probe[] = [];
  const params: Json[] = op.operation.parameters ?? [];
  const form = op.operation.requestBody?.content?.['application/x-www-form-urlencoded'];
  const json = op.operation.requestBody?.content?.['application/json'];
  const baseBody = json ? (json.example ?? sample(json.schema)) : undefined;
  const plain = !op.operation.responses['422'];
  for (const param of params) {
    if (param.in === 'path') {
      list.push({
        label: `${op.method} ${op.path} path ${param.name}`,
        method: op.method,
        url: urlOf(op, { name: param.name, value: NUL_IN_URL }, {}),
        headers: { ...headers, ...(json ? { 'content-type': 'application/json' } : {}) },
        body: json ? JSON.stringify(baseBody) : undefined,
        plain,
      });
    } else if (param.in === 'query' && isFreeText(resolve(param.schema))) {
      list.push({
        label: `${op.method} ${op.path} query ${param.name}`,
        method: op.method,
        url: urlOf(op, undefined, { [param.name]: NUL_IN_URL }),
        headers,
        field: param.name,
        plain,
      });
    }
  }
  for (const [kind, bad] of Object.entries(BAD)) {
    if (json) {
      for (const m of mutations(json.schema, baseBody, bad)) {
        list.push({
          label: `${op.method} ${op.path} body ${m.path.join('.')} (${kind})`,
          method: op.method,
          url: urlOf(op, undefined, {}),
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify(m.value),
          field: m.path.join('.'),
          plain,
        });
      }
    }
    if (form) {
      for (const name of Object.keys(resolve(form.schema).properties ?? {})) {
        list.push({
          label: `${op.method} ${op.path} form ${name} (${kind})`,
          method: op.method,
          url: urlOf(op, undefined, {}),
          headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ ...form.example, [name]: bad }).toString(),
          plain,
        });
      }
    }
  }
  return list;
}

/** Row counts of every table (rate-limit counters aside: a refused request may still count). */
async function rowCounts(): Promise<Record<string, number>> {
  const tables = await sql<{ name: string }>(
    suite.server,
    `select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not like 'rate_limit%' order by 1`,
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const [row] = await sql<{ n: number }>(suite.server, `select count(*)::int as n from "${name}"`);
    counts[name] = row!.n;
  }
  return counts;
}

async function send(probe: Probe) {
  const response = await fetch(`${suite.server.url}${probe.url}`, {
    method: probe.method,
    headers: probe.headers,
    body: probe.body,
  });
  const text = await response.text();
  let body: any = text;
  try {
    body = JSON.parse(text);
  } catch {
    // XML, HTML or empty: only the status matters then.
  }
  return { status: response.status, body };
}

/** What a refusal must look like; the problem in words, or null. */
function problem(probe: Probe, res: { status: number; body: any }): string | null {
  const said = `${probe.label}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
  if (res.status >= 500) return said;
  if (probe.plain) return res.status >= 400 ? null : said;
  if (probe.field === undefined) return res.status === 404 || res.status === 422 ? null : said;
  if (res.status !== 422 || res.body?.error?.code !== 'validation_failed') return said;
  const paths: string[] = (res.body.error.details ?? []).map((d: { path: string }) => d.path);
  // A union names the union's path (which branch failed is its own detail); anything else names the field.
  return paths.some((p) => p === probe.field || probe.field!.startsWith(`${p}.`)) ? null : said;
}

describe('text PostgreSQL cannot store is refused everywhere', () => {
  it('the cases a fuzz of the API found answering 500', async () => {
    const expect422 = async (res: Promise<{ status: number; body: any }>, path: string) => {
      const { status, body } = await res;
      expect(status, JSON.stringify(body)).toBe(422);
      expect(body.error.code).toBe('validation_failed');
      expect(body.error.details.map((d: { path: string }) => d.path)).toContain(path);
    };
    await expect422(app.rest('POST', '/v1/organizations', { name: 'A\u0000B' }), 'name');
    await expect422(app.rest('POST', '/v1/organizations', { name: '\ud800' }), 'name');
    await expect422(app.rest('GET', '/v1/users?search=%00'), 'search');
    const asUser = { authorization: `Bearer ${accessToken}`, origin: ORIGIN };
    await expect422(app.rest('PATCH', '/v1/auth/me', { profile: { a: '\u0000' } }, asUser), 'profile.a');
    await expect422(app.rest('PATCH', '/v1/auth/me', { profile: { 'b\u0000': 1 } }, asUser), 'profile.b\u0000');
    await expect422(app.rest('DELETE', '/v1/auth/me/grants/%00', undefined, asUser), 'id');
    await expect422(app.rest('DELETE', '/v1/auth/sessions/%00', undefined, asUser), 'id');
    await expect422(
      app.rest('POST', '/v1/webhooks', { url: 'https://hooks.example.com/x', description: 'A\u0000' }),
      'description',
    );
  });

  it('the OAuth 2.0 provider (outside the OpenAPI document) answers U+0000 with its own errors, never 500', async () => {
    const base = `${suite.server.url}/oauth2/${app.id}`;
    const form = (fields: Record<string, string>) => ({
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
    const nul = 'A\u0000B';
    const requests: Array<[string, RequestInit?]> = [
      [`${base}/auth?client_id=A%00B&response_type=code&redirect_uri=https%3A%2F%2Fa.example%2Fcb&scope=openid`],
      [`${base}/auth/A%00B`],
      [`${base}/token`, form({ grant_type: 'authorization_code', code: nul, client_id: nul, redirect_uri: nul })],
      [`${base}/token`, form({ grant_type: 'refresh_token', refresh_token: nul, client_id: nul })],
      [`${base}/token/introspection`, form({ token: nul, client_id: nul })],
      [`${base}/token/revocation`, form({ token: nul, client_id: nul })],
      [
        `${base}/reg`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_name: nul, redirect_uris: [`${ORIGIN}/cb`] }),
        },
      ],
    ];
    for (const [url, init] of requests) {
      const res = await fetch(url, { redirect: 'manual', ...init });
      expect(res.status, `${init?.method ?? 'GET'} ${url}: ${await res.text()}`).toBeLessThan(500);
    }
  });

  it('U+0000 and a lone surrogate in every string field of every operation: 422 naming it (404 in a path), never 500', async () => {
    const before = await rowCounts();
    const all = operations().flatMap(probes);
    expect(all.length).toBeGreaterThan(500);
    const problems: string[] = [];
    // A few at a time: the server is one process (and PGlite one connection), more would only queue.
    let next = 0;
    await Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next < all.length) {
          const probe = all[next++]!;
          const found = problem(probe, await send(probe));
          if (found) problems.push(found);
        }
      }),
    );
    expect(problems).toEqual([]);
    expect(await rowCounts()).toEqual(before);
  }, 180_000);
});
