import { z } from 'zod';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { isUuid, newId } from '../../lib/ids.ts';
import { storableJson, text } from '../../lib/schemas.ts';
import { EVENT_COLUMNS, EVENTS_FROM_RECORDSET, eventRecordset, eventRow, recordEvent } from '../events/events.service.ts';
import type { Directory } from './directory.entity.ts';
import { type DirectoryGroup, DirectoryGroupEntity } from './directory-group.entity.ts';
import { listResponse } from './scim.discovery.ts';
import { invalidValue, ScimError, scimNotFound } from './scim.errors.ts';
import { type AttributeResolver, CORE_GROUP, parseFilter, splitUrn } from './scim.filter.ts';
import { syncDirectoryRoles } from './scim.members.ts';
import { filteredPage, normalizePatch, project, type ScimListQuery, zodToScim } from './scim.shared.ts';

const MemberSchema = z.looseObject({ value: text().max(64) });
const MembersSchema = z.array(MemberSchema).max(10_000);

const GroupInputSchema = z
  .looseObject({
    displayName: text().trim().min(1).max(320),
    externalId: text().max(320).nullish(),
    members: MembersSchema.nullish(),
  })
  .check(storableJson);

type GroupInput = z.output<typeof GroupInputSchema>;

function readGroup(body: unknown): GroupInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidValue('The body must be a Group resource');
  const parsed = GroupInputSchema.safeParse(body);
  if (!parsed.success) throw zodToScim(parsed.error);
  return parsed.data;
}

interface Member {
  directory_user_id: string;
  user_id: string;
  user_name: string;
}

async function membersOf(em: EntityManager, groupIds: string[]) {
  const byGroup = new Map<string, Member[]>();
  if (!groupIds.length) return byGroup;
  const rows = await em.execute<Array<Member & { group_id: string }>>(
    `select gm.group_id, du.id as directory_user_id, du.user_id, du.user_name from directory_group_members gm
       join directory_users du on du.id = gm.directory_user_id
      where gm.group_id = any(?::uuid[]) order by gm.created_at, gm.id`,
    [`{${groupIds.join(',')}}`],
  );
  for (const r of rows) {
    const list = byGroup.get(r.group_id) ?? [];
    list.push(r);
    byGroup.set(r.group_id, list);
  }
  return byGroup;
}

export function toScimGroup(base: string, g: DirectoryGroup, members: Member[] | null) {
  return {
    schemas: [CORE_GROUP],
    id: g.id,
    ...(typeof g.externalId === 'string' ? { externalId: g.externalId } : {}),
    displayName: g.displayName,
    ...(members
      ? { members: members.map((m) => ({ value: m.user_id, display: m.user_name, $ref: `${base}/Users/${m.user_id}` })) }
      : {}),
    meta: {
      resourceType: 'Group',
      created: g.createdAt.toISOString(),
      lastModified: g.updatedAt.toISOString(),
      location: `${base}/Groups/${g.id}`,
    },
  };
}

const wantsMembers = (query: ScimListQuery) =>
  !query.excludedAttributes?.toLowerCase().includes('members') &&
  (!query.attributes || query.attributes.toLowerCase().includes('members'));

async function findGroup(em: EntityManager, directory: Directory, id: string) {
  if (!isUuid(id)) throw scimNotFound('Group');
  const group = await em.findOne(DirectoryGroupEntity, { id: id.toLowerCase(), directory: directory.id });
  if (!group) throw scimNotFound('Group');
  return group;
}

const groupEvent = (directory: Directory, g: DirectoryGroup) => ({
  directory_id: directory.id,
  organization_id: directory.organization,
  id: g.id,
  display_name: g.displayName,
  external_id: g.externalId ?? null,
});

/**
 * The directory users named by `members[].value` (their SCIM ids, the Gatehouse user ids). A value that is not a
 * user of this directory (another directory's included) is 400 `invalidValue`: nothing of another directory is reachable.
 */
async function resolveMembers(em: EntityManager, directory: Directory, values: string[]) {
  const ids = [...new Set(values.map((v) => v.toLowerCase()))];
  if (!ids.length) return [];
  const bad = ids.find((v) => !isUuid(v));
  if (bad !== undefined) throw invalidValue(`${bad} is not a user of this directory`);
  const rows = await em.execute<Array<{ id: string; user_id: string }>>(
    'select id, user_id from directory_users where directory_id = ? and user_id = any(?::uuid[])',
    [directory.id, `{${ids.join(',')}}`],
  );
  if (rows.length !== ids.length) {
    const known = new Set(rows.map((r) => r.user_id));
    throw invalidValue(`${ids.find((v) => !known.has(v))} is not a user of this directory`);
  }
  return rows;
}

/** Adds members in one statement (those already in stay), each new one with `directory_group.user_added`. */
async function addMembers(em: EntityManager, directory: Directory, group: DirectoryGroup, values: string[]) {
  const rows = await resolveMembers(em, directory, values);
  if (!rows.length) return [];
  const added = await em.execute<Array<{ directory_user_id: string }>>(
    `insert into directory_group_members (id, application_id, created_at, directory_id, group_id, directory_user_id)
     select i, ?, now(), ?, ?, u from unnest(?::uuid[], ?::uuid[]) as t(i, u)
     on conflict (group_id, directory_user_id) do nothing returning directory_user_id`,
    [
      directory.application,
      directory.id,
      group.id,
      `{${rows.map(() => newId()).join(',')}}`,
      `{${rows.map((r) => r.id).join(',')}}`,
    ],
  );
  const userOf = new Map(rows.map((r) => [r.id, r.user_id]));
  await writeMemberEvents(
    em,
    directory,
    group,
    'directory_group.user_added',
    added.map((a) => userOf.get(a.directory_user_id) ?? ''),
  );
  return added.map((a) => a.directory_user_id);
}

/** Removes members (all of them with `null`), each with `directory_group.user_removed`. */
async function removeMembers(em: EntityManager, directory: Directory, group: DirectoryGroup, values: string[] | null) {
  const ids = values === null ? null : [...new Set(values.map((v) => v.toLowerCase()))].filter(isUuid);
  if (ids && !ids.length) return [];
  const removed = await em.execute<Array<{ directory_user_id: string; user_id: string }>>(
    `delete from directory_group_members gm using directory_users du
      where gm.group_id = ? and du.id = gm.directory_user_id${ids ? ' and du.user_id = any(?::uuid[])' : ''}
      returning gm.directory_user_id, du.user_id`,
    ids ? [group.id, `{${ids.join(',')}}`] : [group.id],
  );
  await writeMemberEvents(
    em,
    directory,
    group,
    'directory_group.user_removed',
    removed.map((r) => r.user_id),
  );
  return removed.map((r) => r.directory_user_id);
}

/** The member events of a batch in one statement (a batch can be thousands). */
async function writeMemberEvents(
  em: EntityManager,
  directory: Directory,
  group: DirectoryGroup,
  type: 'directory_group.user_added' | 'directory_group.user_removed',
  userIds: string[],
) {
  if (!userIds.length) return;
  const rows = userIds.map((user_id) =>
    eventRow(directory.application, type, {
      directory_id: directory.id,
      organization_id: directory.organization,
      group_id: group.id,
      user_id,
    }),
  );
  await em.execute(`insert into events (${EVENT_COLUMNS}) ${EVENTS_FROM_RECORDSET}`, [eventRecordset(rows)]);
}

/** Role mappings follow group membership: only when the directory maps any group is there anything to recompute. */
async function syncRoles(services: Services, em: EntityManager, directory: Directory, directoryUserIds: string[]) {
  if (!directory.groupRoleMappings.length || !directoryUserIds.length) return;
  await syncDirectoryRoles(services.hooks, em, directory, directoryUserIds);
}

const memberValues = (members: Array<{ value: string }> | null | undefined) => (members ?? []).map((m) => m.value);

export async function createScimGroup(services: Services, em: EntityManager, directory: Directory, base: string, body: unknown) {
  const input = readGroup(body);
  return em.transactional(async (tx) => {
    const group = tx.create(DirectoryGroupEntity, {
      id: newId(),
      application: directory.application,
      directory: directory.id,
      displayName: input.displayName,
      externalId: input.externalId ?? null,
    });
    recordEvent(tx, directory.application, 'directory_group.created', groupEvent(directory, group));
    await tx.flush();
    const added = await addMembers(tx, directory, group, memberValues(input.members));
    await syncRoles(services, tx, directory, added);
    return toScimGroup(base, group, (await membersOf(tx, [group.id])).get(group.id) ?? []);
  });
}

const groupAttributes: AttributeResolver = (path) => {
  const { rest } = splitUrn(path);
  switch (rest.toLowerCase()) {
    case 'displayname':
      return { expr: 'g.display_name', kind: 'ci-text' };
    case 'externalid':
      return { expr: 'g.external_id', kind: 'text' };
    case 'id':
      return { expr: 'g.id::text', kind: 'text' };
    case 'meta.created':
      return { expr: 'g.created_at', kind: 'timestamp' };
    case 'meta.lastmodified':
      return { expr: 'g.updated_at', kind: 'timestamp' };
    case 'members':
      return {
        array: `(select jsonb_agg(jsonb_build_object('value', du.user_id::text, 'display', du.user_name))
                   from directory_group_members gm join directory_users du on du.id = gm.directory_user_id
                  where gm.group_id = g.id)`,
        defaultSub: 'value',
        element: (sub) =>
          sub.toLowerCase() === 'value'
            ? { expr: "e.v ->> 'value'", kind: 'ci-text' }
            : sub.toLowerCase() === 'display'
              ? { expr: "e.v ->> 'display'", kind: 'ci-text' }
              : null,
      };
    default:
      return null;
  }
};

export async function listScimGroups(em: EntityManager, directory: Directory, base: string, query: ScimListQuery) {
  const { total, rows, startIndex } = await filteredPage<{ id: string }>(
    em,
    { table: 'directory_groups g', select: 'g.id, g.created_at', attributes: groupAttributes },
    directory.id,
    query,
  );
  const groups = rows.length ? await em.find(DirectoryGroupEntity, { id: { $in: rows.map((r) => r.id) } }) : [];
  const byId = new Map(groups.map((g) => [g.id, g]));
  const members = wantsMembers(query)
    ? await membersOf(
        em,
        groups.map((g) => g.id),
      )
    : null;
  const ordered = rows.flatMap((r) => {
    const g = byId.get(r.id);
    return g ? [g] : [];
  });
  return listResponse(
    ordered.map((g) => project(toScimGroup(base, g, members ? (members.get(g.id) ?? []) : null), query)),
    total,
    startIndex,
  );
}

export async function getScimGroup(em: EntityManager, directory: Directory, base: string, id: string, query: ScimListQuery) {
  const group = await findGroup(em, directory, id);
  const members = wantsMembers(query) ? ((await membersOf(em, [group.id])).get(group.id) ?? []) : null;
  return project(toScimGroup(base, group, members), query);
}

/** `PUT /Groups/{id}`: name, external id and the exact member list replaced. */
export async function replaceScimGroup(
  services: Services,
  em: EntityManager,
  directory: Directory,
  base: string,
  id: string,
  body: unknown,
) {
  const input = readGroup(body);
  return em.transactional(async (tx) => {
    const group = await findGroup(tx, directory, id);
    const renamed = group.displayName !== input.displayName;
    group.displayName = input.displayName;
    group.externalId = input.externalId ?? null;
    group.updatedAt = new Date();
    recordEvent(tx, directory.application, 'directory_group.updated', groupEvent(directory, group));
    await tx.flush();
    const affected = await setMembers(tx, directory, group, memberValues(input.members));
    await syncRoles(services, tx, directory, renamed ? await allMembers(tx, group) : affected);
    return toScimGroup(base, group, (await membersOf(tx, [group.id])).get(group.id) ?? []);
  });
}

async function allMembers(em: EntityManager, group: DirectoryGroup) {
  const rows = await em.execute<Array<{ directory_user_id: string }>>(
    'select directory_user_id from directory_group_members where group_id = ?',
    [group.id],
  );
  return rows.map((r) => r.directory_user_id);
}

/** The members become exactly `values`. */
async function setMembers(em: EntityManager, directory: Directory, group: DirectoryGroup, values: string[]) {
  const wanted = await resolveMembers(em, directory, values);
  const keep = new Set(wanted.map((w) => w.user_id));
  const current = (await membersOf(em, [group.id])).get(group.id) ?? [];
  const removed = await removeMembers(
    em,
    directory,
    group,
    current.filter((m) => !keep.has(m.user_id)).map((m) => m.user_id),
  );
  const added = await addMembers(
    em,
    directory,
    group,
    wanted.map((w) => w.user_id),
  );
  return [...removed, ...added];
}

/** The user ids a `members[value eq "…"]` path names (`or` of several allowed), parsed with `scim2-parse-filter`. */
function membersFilterValues(path: string): string[] {
  const filter = parseFilter(path);
  if (filter.op !== '[]') throw new ScimError(400, `Unsupported path ${path}`, 'invalidPath');
  const values: string[] = [];
  const walk = (f: unknown): void => {
    // nodes of the parsed filter: `or` with `filters`, or a comparison `value eq "…"`
    const node = f as { op: string; filters?: unknown[]; attrPath?: string; compValue?: unknown };
    if (node.op === 'or' && node.filters) {
      for (const f2 of node.filters) walk(f2);
      return;
    }
    if (node.op === 'eq' && node.attrPath?.toLowerCase() === 'value' && typeof node.compValue === 'string') {
      values.push(node.compValue);
      return;
    }
    throw new ScimError(400, 'Members are removed by value eq "…"', 'invalidFilter');
  };
  // scim2-parse-filter's value-path node (`op: '[]'`) carries the inner filter as `valFilter`.
  walk((filter as { valFilter: unknown }).valFilter);
  return values;
}

const valuesOf = (value: unknown): string[] => {
  const parsed = MembersSchema.safeParse(Array.isArray(value) ? value : value === undefined || value === null ? [] : [value]);
  if (!parsed.success) throw zodToScim(parsed.error);
  return memberValues(parsed.data);
};

/**
 * `PATCH /Groups/{id}`: members added and removed in batches (`add` / `remove` on `members`, a removal by
 * `members[value eq "…"]` as Entra sends it, `replace` of the whole list), and `displayName`/`externalId` set, with or
 * without a path (Okta sends `{"op": "replace", "value": {"id", "displayName"}}`).
 */
export async function patchScimGroup(
  services: Services,
  em: EntityManager,
  directory: Directory,
  base: string,
  id: string,
  body: unknown,
) {
  const operations = normalizePatch(body);
  return em.transactional(async (tx) => {
    const group = await findGroup(tx, directory, id);
    const affected = new Set<string>();
    let renamed = false;
    let changed = false;
    const setAttribute = (name: string, value: unknown, op: string) => {
      const key = name.toLowerCase();
      if (key === 'displayname') {
        const parsed = text().trim().min(1).max(320).safeParse(value);
        if (!parsed.success || op === 'remove') throw new ScimError(400, 'displayName is required', 'invalidValue');
        renamed ||= parsed.data !== group.displayName;
        group.displayName = parsed.data;
      } else if (key === 'externalid') {
        const parsed = text()
          .max(320)
          .nullable()
          .safeParse(op === 'remove' ? null : value);
        if (!parsed.success) throw invalidValue('externalId must be a string');
        group.externalId = parsed.data;
      } else if (key !== 'id' && key !== 'schemas' && key !== 'meta') {
        throw new ScimError(400, `Unsupported attribute ${name}`, 'invalidPath');
      }
      changed = true;
    };
    const members = async (op: string, values: string[] | null) => {
      const ids =
        op === 'add'
          ? await addMembers(tx, directory, group, values ?? [])
          : op === 'remove'
            ? await removeMembers(tx, directory, group, values)
            : await setMembers(tx, directory, group, values ?? []);
      for (const i of ids) affected.add(i);
    };
    for (const operation of operations) {
      const { op, path } = operation;
      const value = 'value' in operation ? operation.value : undefined;
      const { rest } = splitUrn(path ?? '');
      const lower = rest.toLowerCase();
      if (!path) {
        // without a path, `value` is an object of attributes (normalizePatch checked it)
        for (const [name, v] of Object.entries(value as Record<string, unknown>)) {
          if (name.toLowerCase() === 'members') await members(op, valuesOf(v));
          else setAttribute(name, v, op);
        }
      } else if (lower === 'members') {
        await members(op, op === 'remove' && (value === undefined || value === null) ? null : valuesOf(value));
      } else if (lower.startsWith('members[')) {
        if (op !== 'remove') throw new ScimError(400, 'A filtered members path can only be removed', 'invalidPath');
        await members('remove', membersFilterValues(rest));
      } else {
        setAttribute(rest, value, op);
      }
    }
    if (changed || affected.size) {
      group.updatedAt = new Date();
      if (changed) recordEvent(tx, directory.application, 'directory_group.updated', groupEvent(directory, group));
      await tx.flush();
    }
    await syncRoles(services, tx, directory, renamed ? await allMembers(tx, group) : [...affected]);
    return toScimGroup(base, group, (await membersOf(tx, [group.id])).get(group.id) ?? []);
  });
}

/** `DELETE /Groups/{id}`: the group and its memberships; the roles its members had from it are recomputed. */
export async function deleteScimGroup(services: Services, em: EntityManager, directory: Directory, id: string) {
  await em.transactional(async (tx) => {
    const group = await findGroup(tx, directory, id);
    const former = await allMembers(tx, group);
    recordEvent(tx, directory.application, 'directory_group.deleted', {
      directory_id: directory.id,
      organization_id: directory.organization,
      id: group.id,
      display_name: group.displayName,
    });
    tx.remove(group);
    await tx.flush();
    await syncRoles(services, tx, directory, former);
  });
}
