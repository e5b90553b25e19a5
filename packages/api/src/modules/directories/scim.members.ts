import type { EntityManager } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { Hooks } from '../../lib/modules.ts';
import { MembershipEntity } from '../organizations/membership.entity.ts';
import { changeMembership, insertMembership } from '../organizations/organizations.service.ts';
import { type User, UserEntity } from '../users/user.entity.ts';
import type { Directory } from './directory.entity.ts';
import { ScimError } from './scim.errors.ts';

/**
 * The role `group_role_mappings` give each of the directory's users (all of them, or those of `directoryUserIds`):
 * the role of the first mapping, in the order written, naming a group the user is in; `member` when none does.
 */
async function wantedRoles(em: EntityManager, directory: Directory, directoryUserIds: string[] | null) {
  return em.execute<Array<{ user_id: string; role: string }>>(
    `select du.user_id,
            coalesce((select m.v->>'role' from jsonb_array_elements(d.group_role_mappings) with ordinality as m(v, i)
                       where exists (select 1 from directory_group_members gm
                                       join directory_groups g on g.id = gm.group_id
                                      where gm.directory_user_id = du.id and g.display_name = m.v->>'group')
                       order by m.i limit 1), 'member') as role
       from directory_users du join directories d on d.id = du.directory_id
      where du.directory_id = ?${directoryUserIds ? ' and du.id = any(?::uuid[])' : ''}`,
    directoryUserIds ? [directory.id, `{${directoryUserIds.join(',')}}`] : [directory.id],
  );
}

/** The role one directory user should have now. */
export async function roleFor(em: EntityManager, directory: Directory, directoryUserId: string) {
  const [row] = await wantedRoles(em, directory, [directoryUserId]);
  return row?.role ?? 'member';
}

/**
 * Gives the memberships this directory made (`source: directory`) the roles the mappings decide now, each change with
 * its `organization_membership.updated` event. A membership made otherwise (added by hand before the directory linked
 * the user) keeps the role it was given.
 */
export async function syncDirectoryRoles(
  hooks: Hooks,
  em: EntityManager,
  directory: Directory,
  directoryUserIds: string[] | null,
) {
  if (directoryUserIds && !directoryUserIds.length) return;
  const wanted = await wantedRoles(em, directory, directoryUserIds);
  if (!wanted.length) return;
  const byUser = new Map(wanted.map((w) => [w.user_id, w.role]));
  const memberships = await em.find(MembershipEntity, {
    organization: directory.organization,
    source: 'directory',
    user: { $in: [...byUser.keys()] },
  });
  const changed = memberships.filter((m) => byUser.get(m.user) !== m.role);
  if (!changed.length) return;
  const users = await em.find(UserEntity, { id: { $in: changed.map((m) => m.user) } });
  for (const user of users) {
    await changeMembership(hooks, em, { organizationId: directory.organization, user, role: byUser.get(user.id) ?? 'member' });
  }
}

/**
 * Makes sure a directory user is a member of the directory's organization (`source: directory`), `active` or
 * `suspended` as the directory says. A user who is a member already keeps their membership (and its source); the
 * directory then governs its status. A refused add (the seat limit) is the directory's 409. `known` says the user was
 * created in this transaction (so has no membership yet); `role` is the role a new membership gets (null: from the
 * mappings, for `directoryUserId`).
 */
export async function ensureMembership(
  hooks: Hooks,
  em: EntityManager,
  input: { directory: Directory; user: User; known: boolean; role: string | null; directoryUserId?: string; active: boolean },
) {
  const { directory, user } = input;
  const existing = input.known
    ? null
    : await em.findOne(MembershipEntity, { organization: directory.organization, user: user.id });
  if (!existing) {
    const role = input.role ?? (input.directoryUserId ? await roleFor(em, directory, input.directoryUserId) : 'member');
    try {
      await insertMembership(hooks, em, { organizationId: directory.organization, user, role, source: 'directory' });
    } catch (error) {
      if (error instanceof AppError && error.code === 'seat_limit_reached') {
        throw new ScimError(409, 'The organization has no seat left for this user');
      }
      if (error instanceof AppError && (error.code === 'user_merged' || error.code === 'already_member')) {
        // Another request linked the same user at the same moment (or the user was merged): the unique keys decided.
        throw new ScimError(409, 'A user with this userName or address already exists in the directory', 'uniqueness');
      }
      throw error;
    }
    if (input.active) return;
  }
  await changeMembership(hooks, em, {
    organizationId: directory.organization,
    user,
    status: input.active ? 'active' : 'suspended',
  });
}
