import type { Services } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { actAs } from '../../lib/acting.ts';
import { sha256 } from '../../lib/crypto.ts';
import { isUuid } from '../../lib/ids.ts';
import { bearer } from '../applications/callers.ts';
import { scimBaseUrl } from './directories.service.ts';
import type { Directory } from './directory.entity.ts';
import { discovery, serviceProviderConfig } from './scim.discovery.ts';
import { ScimError, scimNotFound } from './scim.errors.ts';
import {
  createScimGroup,
  deleteScimGroup,
  getScimGroup,
  listScimGroups,
  patchScimGroup,
  replaceScimGroup,
} from './scim.groups.ts';
import type { ScimListQuery } from './scim.shared.ts';
import { createScimUser, deleteScimUser, getScimUser, listScimUsers, patchScimUser, replaceScimUser } from './scim.users.ts';

export { ScimError } from './scim.errors.ts';

/** One request to a directory's SCIM service, as the HTTP layer hands it over. */
export interface ScimRequest {
  method: string;
  directoryId: string;
  /** The path below `/scim/v2/{directory_id}/`, split on `/` (decoded). */
  segments: string[];
  query: ScimListQuery;
  body: unknown;
  authorization: string | undefined;
}

/** A SCIM answer: its status and body (none for 204); the HTTP layer writes it as `application/scim+json`. */
export interface ScimAnswer {
  status: number;
  body?: unknown;
  location?: string;
}

const unauthorized = () => new ScimError(401, 'The bearer token is not valid for this directory');

/**
 * The directory a request may act on: the bearer token's, which must be the path's. A missing, unknown or rotated
 * token, or another directory's, is 401 (the same answer for each); a disabled directory is 403.
 */
async function authenticate(em: EntityManager, directoryId: string, authorization: string | undefined): Promise<Directory> {
  const token = bearer(authorization);
  if (!token?.startsWith('scim_') || !isUuid(directoryId)) throw unauthorized();
  // One indexed read (the token hash is unique), which also writes `last_request_at` at most once a minute.
  const [row] = await preparedQuery<Record<string, any>>(
    em,
    'scim_authenticate',
    `with d as (select * from directories where token_hash = ?),
          seen as (update directories set last_request_at = now()
                    where id = (select id from d) and (last_request_at is null or last_request_at < now() - interval '1 minute'))
     select * from d`,
    [sha256(token)],
  );
  if (!row || row.id !== directoryId.toLowerCase()) throw unauthorized();
  if (row.status !== 'active') throw new ScimError(403, 'The directory is disabled');
  return {
    id: row.id,
    application: row.application_id,
    organization: row.organization_id,
    name: row.name,
    provider: row.provider,
    status: row.status,
    tokenHash: row.token_hash,
    groupRoleMappings:
      typeof row.group_role_mappings === 'string' ? JSON.parse(row.group_role_mappings) : row.group_role_mappings,
    lastRequestAt: row.last_request_at ? new Date(row.last_request_at) : null,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  } as Directory; // a plain read of the row: the entity's fields from its columns (SCIM requests only read them)
}

const methodNotAllowed = () => new ScimError(405, 'The method is not supported here');

/** Serves one SCIM request (RFC 7644) for the directory of its path. Throws `ScimError` for every refusal. */
export async function handleScimRequest(services: Services, em: EntityManager, request: ScimRequest): Promise<ScimAnswer> {
  const directory = await authenticate(em, request.directoryId, request.authorization);
  // Every change this request makes is the directory's act (the audit log's actor).
  actAs({ type: 'directory', id: directory.id });
  const base = scimBaseUrl(services, directory.id);
  const [resource, id, ...more] = request.segments;
  if (more.length) throw scimNotFound('Resource');
  const { method, query, body } = request;
  const ok = (value: unknown, status = 200): ScimAnswer => ({ status, body: value });
  switch (resource) {
    case 'ServiceProviderConfig':
      if (method !== 'GET') throw methodNotAllowed();
      if (id !== undefined) throw scimNotFound('Resource');
      return ok(serviceProviderConfig(base));
    case 'ResourceTypes':
    case 'Schemas': {
      if (method !== 'GET') throw methodNotAllowed();
      const found = discovery(base, resource, id);
      if (!found) throw scimNotFound('Resource');
      return ok(found);
    }
    case 'Users':
      if (id === undefined) {
        if (method === 'GET') return ok(await listScimUsers(em, directory, base, query));
        if (method === 'POST') {
          const user = await createScimUser(services, em, directory, base, body);
          return { status: 201, body: user, location: user.meta.location };
        }
        throw methodNotAllowed();
      }
      if (method === 'GET') return ok(await getScimUser(em, directory, base, id, query));
      if (method === 'PUT') return ok(await replaceScimUser(services, em, directory, base, id, body));
      if (method === 'PATCH') return ok(await patchScimUser(services, em, directory, base, id, body));
      if (method === 'DELETE') {
        await deleteScimUser(em, directory, id);
        return { status: 204 };
      }
      throw methodNotAllowed();
    case 'Groups':
      if (id === undefined) {
        if (method === 'GET') return ok(await listScimGroups(em, directory, base, query));
        if (method === 'POST') {
          const group = await createScimGroup(services, em, directory, base, body);
          return { status: 201, body: group, location: group.meta.location };
        }
        throw methodNotAllowed();
      }
      if (method === 'GET') return ok(await getScimGroup(em, directory, base, id, query));
      if (method === 'PUT') return ok(await replaceScimGroup(services, em, directory, base, id, body));
      if (method === 'PATCH') return ok(await patchScimGroup(services, em, directory, base, id, body));
      if (method === 'DELETE') {
        await deleteScimGroup(services, em, directory, id);
        return { status: 204 };
      }
      throw methodNotAllowed();
    default:
      throw scimNotFound('Resource');
  }
}
