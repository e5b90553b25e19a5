import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { scimPatch } from 'scim-patch';
import { z } from 'zod';
import type { Services } from '../../context.ts';
import { type EntityManager, preparedQuery } from '../../db/orm.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { storableJson, text } from '../../lib/schemas.ts';
import { EVENT_COLUMNS, EVENTS_FROM_RECORDSET, eventRecordset, eventRow, recordEvent } from '../events/events.service.ts';
import { type Membership, MembershipEntity } from '../organizations/membership.entity.ts';
import { memberAddChecksClearSql } from '../organizations/organizations.hooks.ts';
import { deleteMembership, toMemberRecord } from '../organizations/organizations.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import { normalizeEmail, toUserRecord, userFromRow } from '../users/users.service.ts';
import { organizationVerifiedDomainSql } from './directories.hooks.ts';
import type { Directory } from './directory.entity.ts';
import { type DirectoryUser, DirectoryUserEntity } from './directory-user.entity.ts';
import { listResponse, MAX_COUNT } from './scim.discovery.ts';
import { invalidValue, ScimError, scimNotFound } from './scim.errors.ts';
import { type AttributeResolver, CORE_USER, ENTERPRISE_USER, jsonPath, splitUrn } from './scim.filter.ts';
import { ensureMembership } from './scim.members.ts';
import { filteredPage, normalizePatch, project, type ScimListQuery, zodToScim } from './scim.shared.ts';

/** A SCIM boolean as identity providers send it: Entra writes `"True"`/`"False"`. */
export const ScimBoolean = z
  .union([z.boolean(), z.enum(['true', 'false', 'True', 'False', 'TRUE', 'FALSE'])])
  .transform((v) => v === true || (typeof v === 'string' && v.toLowerCase() === 'true'));

const EmailSchema = z.looseObject({
  value: text().max(320).optional(),
  type: text().max(64).optional(),
  primary: ScimBoolean.optional(),
});

/** What a User resource must hold to be stored; every other attribute is kept as sent (RFC 7643 §4.1). */
const UserInputSchema = z
  .looseObject({
    userName: text().trim().min(1).max(320),
    externalId: text().max(320).nullish(),
    active: ScimBoolean.optional(),
    emails: z.array(EmailSchema).max(50).optional(),
    name: z.looseObject({ givenName: text().max(200).nullish(), familyName: text().max(200).nullish() }).nullish(),
    displayName: text().max(320).nullish(),
  })
  .check(storableJson);

/** Attributes the server owns or never keeps: the identity provider's copy of them is dropped. */
const DROPPED = new Set(['id', 'meta', 'groups', 'password', 'schemas']);

/** The stored form of a resource the identity provider sent: its attributes, less those the server owns. */
function storable(input: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) if (!DROPPED.has(key)) out[key] = value;
  return out;
}

/** Validates a User body and answers its stored form and the columns derived from it. */
function readUser(body: unknown, options: { activeDefault: boolean }) {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidValue('The body must be a User resource');
  const parsed = UserInputSchema.safeParse(body);
  if (!parsed.success) throw zodToScim(parsed.error);
  const resource = storable(parsed.data);
  if (JSON.stringify(resource).length > 64 * 1024) throw invalidValue('The User resource is larger than 64 KiB');
  const active = parsed.data.active ?? options.activeDefault;
  resource.active = active;
  return {
    resource,
    userName: parsed.data.userName,
    externalId: parsed.data.externalId ?? null,
    active,
    email: primaryEmail(parsed.data.emails, parsed.data.userName),
  };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The address a user is known by: the primary email, else the first, else a `userName` that is an address. */
function primaryEmail(emails: Array<{ value?: string; primary?: boolean }> | undefined, userName: string): string | null {
  const candidates = [emails?.find((e) => e.primary)?.value, emails?.[0]?.value, userName];
  for (const c of candidates) if (c && EMAIL.test(c.trim())) return c.trim();
  return null;
}

const nameOf = (resource: Record<string, unknown>) => {
  // a SCIM resource's `name` is the complex attribute of RFC 7643 §4.1.1 (read field by field, each checked).
  const name = (resource.name ?? {}) as { givenName?: unknown; familyName?: unknown };
  return {
    first: typeof name.givenName === 'string' ? name.givenName : null,
    last: typeof name.familyName === 'string' ? name.familyName : null,
  };
};

/** The SCIM User of a directory user (RFC 7643 §4.1), with its groups. */
export function toScimUser(base: string, du: DirectoryUser, groups: Array<{ id: string; display_name: string }>) {
  const { schemas: _ignored, ...resource } = du.resource;
  return {
    schemas: du.resource[ENTERPRISE_USER] ? [CORE_USER, ENTERPRISE_USER] : [CORE_USER],
    ...resource,
    id: du.user,
    ...(typeof du.externalId === 'string' ? { externalId: du.externalId } : {}),
    userName: du.userName,
    active: du.active,
    groups: groups.map((g) => ({ value: g.id, display: g.display_name, $ref: `${base}/Groups/${g.id}` })),
    meta: {
      resourceType: 'User',
      created: du.createdAt.toISOString(),
      lastModified: du.updatedAt.toISOString(),
      location: `${base}/Users/${du.user}`,
    },
  };
}

async function groupsOf(em: EntityManager, directoryUserIds: string[]) {
  const byUser = new Map<string, Array<{ id: string; display_name: string }>>();
  if (!directoryUserIds.length) return byUser;
  const rows = await em.execute<Array<{ directory_user_id: string; id: string; display_name: string }>>(
    `select gm.directory_user_id, g.id, g.display_name from directory_group_members gm
       join directory_groups g on g.id = gm.group_id
      where gm.directory_user_id = any(?::uuid[]) order by g.display_name, g.id`,
    [`{${directoryUserIds.join(',')}}`],
  );
  for (const r of rows) byUser.set(r.directory_user_id, [...(byUser.get(r.directory_user_id) ?? []), r]);
  return byUser;
}

async function answerUser(em: EntityManager, base: string, du: DirectoryUser) {
  return toScimUser(base, du, (await groupsOf(em, [du.id])).get(du.id) ?? []);
}

/** The event `data` of a directory user with `role`, the role its membership has (null when it has none). */
function userEventOf(directory: Directory, du: DirectoryUser, role: string | null) {
  // the resource's `emails` were checked as RFC 7643's multi-valued attribute when it was stored.
  const email = primaryEmail(du.resource.emails as Array<{ value?: string; primary?: boolean }> | undefined, du.userName);
  const name = nameOf(du.resource);
  return {
    directory_id: directory.id,
    organization_id: directory.organization,
    id: du.user,
    user_name: du.userName,
    external_id: du.externalId ?? null,
    email,
    first_name: name.first,
    last_name: name.last,
    active: du.active,
    role,
  };
}

/** The event `data` of a directory user, with the role its membership has now. */
async function userEvent(em: EntityManager, directory: Directory, du: DirectoryUser) {
  const membership = await em.findOne(MembershipEntity, { organization: directory.organization, user: du.user });
  return userEventOf(directory, du, membership?.role ?? null);
}

export async function findDirectoryUser(em: EntityManager, directory: Directory, id: string) {
  if (!isUuid(id)) throw scimNotFound('User');
  const du = await em.findOne(DirectoryUserEntity, { directory: directory.id, user: id.toLowerCase() });
  if (!du) throw scimNotFound('User');
  return du;
}

const uniqueness = (detail = 'A user with this userName already exists in the directory') =>
  new ScimError(409, detail, 'uniqueness');

/**
 * The rows of a SCIM create in one statement: the user (when `newUser`), the directory user, their events, and with
 * `member` (the member add checks' clear condition over `o`) the membership and its event too, written only while that
 * condition holds. Answers whether it wrote (always, without `member`).
 */
async function insertDirectoryUser(
  em: EntityManager,
  input: { directory: Directory; user: User; du: DirectoryUser; newUser: boolean; member: string | null },
): Promise<boolean> {
  const { directory, user, du, newUser, member } = input;
  const applicationId = directory.application;
  const now = du.createdAt;
  const membership = member
    ? ({
        id: newId(),
        application: applicationId,
        organization: directory.organization,
        user: user.id,
        role: 'member',
        status: 'active',
        source: 'directory',
        createdAt: now,
        updatedAt: now,
      } as Membership) // a plain membership written by the statement below: the entity's fields, every one set
    : null;
  // A new directory user is in no group yet, so its role is `member` whatever the mappings say.
  const events = [
    ...(newUser ? [eventRow(applicationId, 'user.created', toUserRecord(user))] : []),
    eventRow(applicationId, 'directory_user.created', userEventOf(directory, du, 'member')),
    ...(membership
      ? [
          eventRow(applicationId, 'organization_membership.created', {
            organization_id: directory.organization,
            ...toMemberRecord(membership, user),
          }),
        ]
      : []),
  ];
  const [row] = await preparedQuery<{ written: boolean }>(
    em,
    `scim_create_user${newUser ? '_new' : ''}${member ? '_member' : ''}`,
    `with ${
      newUser
        ? `u as (insert into users (id, application_id, primary_email, email_normalized, email_verified, status, profile,
                                    merged_into, created_at, updated_at)
                 select ?, ?, ?, ?, ?, 'active', ?::jsonb, null, ?, ?
                 ${member ? `where exists (select 1 from organizations o where o.id = ? and ${member})` : ''} returning id),
           t as (update applications set first_traffic_at = now()
                  where id = ? and first_traffic_at is null and exists (select 1 from u)),`
        : ''
    }
          du as (insert into directory_users (id, application_id, directory_id, user_id, user_name, user_name_normalized,
                                              external_id, active, resource, created_at, updated_at)
                 ${newUser ? 'select ?, ?, ?, u.id, ?, ?, ?, ?, ?::jsonb, ?, ? from u' : 'values (?, ?, ?, ?, ?, ?, ?, ?, ?::jsonb, ?, ?)'}
                 returning id),${
                   membership
                     ? `
          m as (insert into organization_members (id, application_id, organization_id, user_id, role, status, source,
                                                  created_at, updated_at)
                select ?, ?, ?, ?, 'member', 'active', 'directory', ?, ? from du returning id),`
                     : ''
                 }
          e as (insert into events (${EVENT_COLUMNS}) ${EVENTS_FROM_RECORDSET} where exists (select 1 from du))
     select exists (select 1 from du) as written`,
    [
      ...(newUser
        ? [
            user.id,
            applicationId,
            user.primaryEmail,
            user.emailNormalized,
            user.emailVerified,
            JSON.stringify(user.profile),
            now,
            now,
            ...(member ? [directory.organization] : []),
            applicationId,
          ]
        : []),
      du.id,
      applicationId,
      directory.id,
      ...(newUser ? [] : [user.id]),
      du.userName,
      du.userNameNormalized,
      du.externalId ?? null,
      du.active,
      JSON.stringify(du.resource),
      now,
      now,
      ...(membership ? [membership.id, applicationId, directory.organization, user.id, now, now] : []),
      eventRecordset(events),
    ],
  );
  return row?.written === true;
}

/**
 * `POST /Users`: the user is matched to the application's user holding the address as a verified email, or created
 * (the email verified only when the organization has verified its domain); an address held by an unverified account
 * is refused (409 `uniqueness`). Then the membership (`source: directory`). One read answers the account, the domain
 * and whether the member add checks have anything to judge; a new, active user they have nothing to judge about is
 * then one more statement (user, directory user, membership, events). Otherwise (a linked account, a live
 * subscription's seat check, a user created inactive) one transaction writes the rows and `ensureMembership` adds the
 * membership.
 */
export async function createScimUser(services: Services, em: EntityManager, directory: Directory, base: string, body: unknown) {
  const input = readUser(body, { activeDefault: true });
  const applicationId = directory.application;
  const email = input.email ? normalizeEmail(input.email) : null;
  const clear = memberAddChecksClearSql(services.hooks);
  const [read] = await preparedQuery<{ found: Record<string, any> | null; verified: boolean; clear: boolean }>(
    em,
    'scim_create_user_read',
    `select (select row_to_json(u) from users u where u.application_id = ? and u.email_normalized = ?) as found,
            (select ${organizationVerifiedDomainSql(services.hooks)}
               from (select ?::uuid as application_id, ?::uuid as organization_id, ?::text as domain) v) as verified,
            ${clear ? `exists (select 1 from organizations o where o.id = ? and ${clear})` : 'false'} as clear`,
    [
      applicationId,
      email,
      applicationId,
      directory.organization,
      email?.split('@')[1] ?? null,
      ...(clear ? [directory.organization] : []),
    ],
  );
  const found = read?.found ? userFromRow(read.found) : null;
  if (found && (!found.emailVerified || found.status === 'merged')) {
    // That account could belong to anyone: linking it would hand it the organization.
    throw uniqueness('The address belongs to an account whose email is not verified');
  }
  const now = new Date();
  const name = nameOf(input.resource);
  const user: User = found ?? {
    id: newId(),
    application: applicationId,
    primaryEmail: input.email,
    emailNormalized: email,
    emailVerified: email !== null && read?.verified === true,
    status: 'active',
    profile: {
      ...(name.first ? { first_name: name.first } : {}),
      ...(name.last ? { last_name: name.last } : {}),
    },
    mergedInto: null,
    createdAt: now,
    updatedAt: now,
  };
  const du = {
    id: newId(),
    application: applicationId,
    directory: directory.id,
    user: user.id,
    userName: input.userName,
    userNameNormalized: input.userName.toLowerCase(),
    externalId: input.externalId,
    active: input.active,
    resource: input.resource,
    createdAt: now,
    updatedAt: now,
  } as DirectoryUser; // a plain directory user written by the statements below: the entity's fields, every one set
  // No read of the userName first: the (directory, userName) unique key refuses a duplicate, races included.
  try {
    if (!found && du.active && clear && read?.clear) {
      if (await insertDirectoryUser(em, { directory, user, du, newUser: true, member: clear })) return toScimUser(base, du, []);
      // A check found something to judge since the read (a subscription began): the transaction below runs it.
    }
    return await em.transactional(async (tx) => {
      await insertDirectoryUser(tx, { directory, user, du, newUser: !found, member: null });
      await ensureMembership(services.hooks, tx, { directory, user, known: !found, role: 'member', active: du.active });
      return toScimUser(base, du, []);
    });
  } catch (error) {
    // The unique keys decide races: of concurrent creates of one userName (or one address), exactly one wins.
    if (error instanceof UniqueConstraintViolationException) throw uniqueness();
    throw error;
  }
}

const MULTI_VALUED = new Set(['emails', 'phonenumbers', 'addresses', 'roles', 'entitlements', 'groups']);

/** How each filterable User attribute reads in SQL (alias `du`). */
const userAttributes: AttributeResolver = (path) => {
  const { urn, rest } = splitUrn(path);
  if (urn === ENTERPRISE_USER) {
    return { expr: `du.resource -> '${ENTERPRISE_USER}' #>> ${jsonPath(rest.split('.'))}`, kind: 'ci-text' };
  }
  const lower = rest.toLowerCase();
  // `emails.value` and the like: the multi-valued attribute answers, and the filter reads its sub-attribute
  if (MULTI_VALUED.has(lower.split('.')[0] ?? '') && lower.includes('.')) return null;
  switch (lower) {
    case 'username':
      // Stored lower-cased: `lower(user_name_normalized)` would hide the index, so compare the column itself.
      return { expr: 'du.user_name_normalized', kind: 'folded' };
    case 'id':
      return { expr: 'du.user_id::text', kind: 'text' };
    case 'externalid':
      return { expr: 'du.external_id', kind: 'text' };
    case 'active':
      return { expr: 'du.active', kind: 'boolean' };
    case 'meta.created':
      return { expr: 'du.created_at', kind: 'timestamp' };
    case 'meta.lastmodified':
      return { expr: 'du.updated_at', kind: 'timestamp' };
    case 'emails':
    case 'phonenumbers':
    case 'addresses':
    case 'roles':
    case 'entitlements': {
      const key = {
        emails: 'emails',
        phonenumbers: 'phoneNumbers',
        addresses: 'addresses',
        roles: 'roles',
        entitlements: 'entitlements',
      }[lower];
      return {
        array: `du.resource -> '${key}'`,
        defaultSub: 'value',
        element: (sub) => {
          if (sub.toLowerCase() === 'primary') return { expr: "(e.v ->> 'primary')::boolean", kind: 'boolean' };
          return { expr: `e.v #>> ${jsonPath([sub])}`, kind: 'ci-text' };
        },
      };
    }
    case 'groups':
    case 'password':
      return null;
    default:
      return { expr: `du.resource #>> ${jsonPath(rest.split('.'))}`, kind: 'ci-text' };
  }
};

/** A directory user's groups as a JSON array of `{id, display_name}`, over its row `du`. */
const GROUPS_SQL = `coalesce((select json_agg(json_build_object('id', g.id, 'display_name', g.display_name) order by g.display_name, g.id)
                                from directory_group_members gm join directory_groups g on g.id = gm.group_id
                               where gm.directory_user_id = du.id), '[]')`;

/** `GET /Users`: filtered (RFC 7644 §3.4.2.2), oldest first, `startIndex` (1-based) and `count`: one statement. */
export async function listScimUsers(em: EntityManager, directory: Directory, base: string, query: ScimListQuery) {
  const withGroups = !query.excludedAttributes?.toLowerCase().includes('groups');
  const { total, rows, startIndex } = await filteredPage<Record<string, any>>(
    em,
    { table: 'directory_users du', select: `du.*${withGroups ? `, ${GROUPS_SQL} as groups` : ''}`, attributes: userAttributes },
    directory.id,
    query,
  );
  return listResponse(
    rows.map((r) => project(toScimUser(base, directoryUserFromRow(r), r.groups ?? []), query)),
    total,
    startIndex,
  );
}

function directoryUserFromRow(r: Record<string, any>): DirectoryUser {
  return {
    id: r.id,
    application: r.application_id,
    directory: r.directory_id,
    user: r.user_id,
    userName: r.user_name,
    userNameNormalized: r.user_name_normalized,
    externalId: r.external_id,
    active: r.active,
    resource: typeof r.resource === 'string' ? JSON.parse(r.resource) : r.resource,
    createdAt: new Date(r.created_at),
    updatedAt: new Date(r.updated_at),
  } as DirectoryUser; // a plain row for reading: the fields the entity has, from the columns of its table
}

export async function getScimUser(em: EntityManager, directory: Directory, base: string, id: string, query: ScimListQuery) {
  return project(await answerUser(em, base, await findDirectoryUser(em, directory, id)), query);
}

/**
 * Stores a directory user's new resource (PUT or PATCH) and acts on what changed: `active: false` suspends the
 * membership (`directory_user.deactivated`), `active: true` restores it (`.reactivated`), anything else is
 * `directory_user.updated`. A `userName` another user of the directory has is 409 `uniqueness`.
 */
async function saveUser(
  services: Services,
  em: EntityManager,
  directory: Directory,
  base: string,
  id: string,
  next: (du: DirectoryUser) => ReturnType<typeof readUser>,
) {
  try {
    return await em.transactional(async (tx) => {
      const du = await findDirectoryUser(tx, directory, id);
      const input = next(du);
      const before = JSON.stringify([du.userName, du.externalId, du.active, du.resource]);
      const wasActive = du.active;
      du.userName = input.userName;
      du.userNameNormalized = input.userName.toLowerCase();
      du.externalId = input.externalId;
      du.active = input.active;
      du.resource = input.resource;
      if (JSON.stringify([du.userName, du.externalId, du.active, du.resource]) === before) return answerUser(tx, base, du);
      du.updatedAt = new Date();
      await tx.flush();
      if (wasActive !== du.active || !du.active) {
        const user = await tx.findOneOrFail(UserEntity, { id: du.user });
        await ensureMembership(services.hooks, tx, {
          directory,
          user,
          known: false,
          role: null,
          directoryUserId: du.id,
          active: du.active,
        });
      }
      const type =
        wasActive === du.active
          ? 'directory_user.updated'
          : du.active
            ? 'directory_user.reactivated'
            : 'directory_user.deactivated';
      recordEvent(tx, directory.application, type, await userEvent(tx, directory, du));
      await tx.flush();
      return answerUser(tx, base, du);
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw uniqueness();
    throw error;
  }
}

/** `PUT /Users/{id}`: the whole resource replaced (Okta sends the whole user, `active: false` to deactivate). */
export function replaceScimUser(
  services: Services,
  em: EntityManager,
  directory: Directory,
  base: string,
  id: string,
  body: unknown,
) {
  return saveUser(services, em, directory, base, id, (du) => readUser(body, { activeDefault: du.active }));
}

/** `PATCH /Users/{id}` (RFC 7644 §3.5.2) through `scim-patch`, after the dialects are normalised (`normalizePatch`). */
export function patchScimUser(
  services: Services,
  em: EntityManager,
  directory: Directory,
  base: string,
  id: string,
  body: unknown,
) {
  const operations = normalizePatch(body);
  return saveUser(services, em, directory, base, id, (du) => {
    const current = {
      ...du.resource,
      schemas: [CORE_USER],
      userName: du.userName,
      ...(typeof du.externalId === 'string' ? { externalId: du.externalId } : {}),
      active: du.active,
      meta: { created: du.createdAt, lastModified: du.updatedAt },
    };
    let patched: Record<string, unknown>;
    try {
      // scim-patch's resource type wants `meta` and `schemas`, which `current` has.
      patched = scimPatch(current, operations, { mutateDocument: false, treatMissingAsAdd: true }) as Record<string, unknown>;
    } catch (error) {
      // scim-patch's errors carry the SCIM error type as `scimCode` (read as possibly absent).
      const code = (error as { scimCode?: string }).scimCode;
      throw new ScimError(
        400,
        // scim-patch throws Error subclasses (an absent message falls back to ours).
        (error as Error).message || 'The PATCH does not apply',
        code === 'noTarget' ? 'noTarget' : 'invalidPath',
      );
    }
    return readUser(patched, { activeDefault: du.active });
  });
}

/** `DELETE /Users/{id}`: the directory user and its organization membership go; the Gatehouse user remains. */
export async function deleteScimUser(em: EntityManager, directory: Directory, id: string) {
  await em.transactional(async (tx) => {
    const du = await findDirectoryUser(tx, directory, id);
    await deleteMembership(tx, { applicationId: directory.application, organizationId: directory.organization, userId: du.user });
    recordEvent(tx, directory.application, 'directory_user.deleted', {
      directory_id: directory.id,
      organization_id: directory.organization,
      id: du.user,
      user_name: du.userName,
    });
    tx.remove(du);
    await tx.flush();
  });
}

export { MAX_COUNT };
