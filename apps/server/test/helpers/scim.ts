import { expect } from 'vitest';
import { createOrg, unique } from './fixtures.ts';
import { ok, rawRequest, type TestApp, type TestServer } from './server.ts';

export const CORE_USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const CORE_GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
export const LIST = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

export interface ScimResponse {
  status: number;
  headers: Headers;
  body: any;
}

/** A directory of a new (or given) organization, with the client its identity provider would be. */
export interface TestDirectory {
  id: string;
  organizationId: string;
  token: string;
  record: any;
  /** A SCIM request to `/scim/v2/{id}{path}` with the directory's token (override with `token`). */
  scim(
    method: string,
    path: string,
    body?: unknown,
    options?: { token?: string | null; contentType?: string },
  ): Promise<ScimResponse>;
}

export function scimClient(server: TestServer, directoryId: string, token: string) {
  return async (
    method: string,
    path: string,
    body?: unknown,
    options: { token?: string | null; contentType?: string } = {},
  ): Promise<ScimResponse> => {
    const bearer = options.token === undefined ? token : options.token;
    return rawRequest(server.url, method, `/scim/v2/${directoryId}${path}`, {
      body,
      headers: {
        ...(bearer !== null ? { authorization: `Bearer ${bearer}` } : {}),
        ...(body !== undefined ? { 'content-type': options.contentType ?? 'application/scim+json' } : {}),
      },
    });
  };
}

export async function createDirectory(
  server: TestServer,
  app: TestApp,
  body: Record<string, unknown> = {},
  organizationId?: string,
): Promise<TestDirectory> {
  const orgId = organizationId ?? (await createOrg(app)).id;
  const record = await ok(
    app.rest('POST', `/v1/organizations/${orgId}/directories`, { name: unique('dir'), provider: 'generic', ...body }),
    201,
  );
  return { id: record.id, organizationId: orgId, token: record.token, record, scim: scimClient(server, record.id, record.token) };
}

/** Asserts a SCIM error answer (RFC 7644 §3.12). */
export function expectScimError(res: ScimResponse, status: number, scimType?: string, label = '') {
  expect(res.status, `${label} ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.headers.get('content-type'), label).toMatch(/^application\/scim\+json/);
  expect(res.body.schemas, label).toEqual([ERROR]);
  expect(res.body.status, label).toBe(String(status));
  if (scimType) expect(res.body.scimType, label).toBe(scimType);
  else expect(res.body.scimType, label).toBeUndefined();
}

/** Asserts a SCIM success and answers its body. */
export async function scimOk(res: Promise<ScimResponse> | ScimResponse, status = 200) {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  if (status !== 204) expect(r.headers.get('content-type')).toMatch(/^application\/scim\+json/);
  return r.body;
}

export const scimUser = (userName: string, extra: Record<string, unknown> = {}) => ({
  schemas: [CORE_USER],
  userName,
  name: { givenName: 'Given', familyName: 'Family' },
  emails: [{ primary: true, value: userName, type: 'work' }],
  active: true,
  ...extra,
});

export const patch = (...operations: unknown[]) => ({ schemas: [PATCH_OP], Operations: operations });
