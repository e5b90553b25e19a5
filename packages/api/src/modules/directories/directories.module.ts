import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { directoriesRouter } from './directories.router.ts';
import {
  DeletedDirectoryGroupEventSchema,
  DeletedDirectoryUserEventSchema,
  DirectoryGroupEventSchema,
  DirectoryGroupUserEventSchema,
  DirectorySchema,
  DirectoryUserEventSchema,
} from './directories.schema.ts';
import { mergeDirectoryUsers } from './directories.service.ts';
import { DirectoryEntity } from './directory.entity.ts';
import { DirectoryGroupEntity } from './directory-group.entity.ts';
import { DirectoryGroupMemberEntity } from './directory-group-member.entity.ts';
import { DirectoryUserEntity } from './directory-user.entity.ts';

/** The events this module emits, with their payload schemas (CONTRACT §8). */
const events = {
  'directory.created': DirectorySchema,
  'directory.updated': DirectorySchema,
  'directory.token_rotated': DirectorySchema,
  'directory.deleted': DirectorySchema,
  'directory_user.created': DirectoryUserEventSchema,
  'directory_user.updated': DirectoryUserEventSchema,
  'directory_user.deactivated': DirectoryUserEventSchema,
  'directory_user.reactivated': DirectoryUserEventSchema,
  'directory_user.deleted': DeletedDirectoryUserEventSchema,
  'directory_group.created': DirectoryGroupEventSchema,
  'directory_group.updated': DirectoryGroupEventSchema,
  'directory_group.deleted': DeletedDirectoryGroupEventSchema,
  'directory_group.user_added': DirectoryGroupUserEventSchema,
  'directory_group.user_removed': DirectoryGroupUserEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/**
 * SCIM 2.0 directories (CONTRACT §8): an organization's identity provider provisions its users and groups at
 * `/scim/v2/{directory_id}` (served by `handleScimRequest`, mounted by the server), and they become its members.
 */
export const directoriesModule = defineModule({
  name: 'directories',
  entities: [DirectoryEntity, DirectoryUserEntity, DirectoryGroupEntity, DirectoryGroupMemberEntity],
  procedures: { organizations: { directories: directoriesRouter } },
  tag: {
    name: 'Directories',
    description:
      "SCIM 2.0 directories: an organization's identity provider (Okta, Microsoft Entra, Google) provisions its users and groups, who become members.",
  },
  hooks: [mergeSteps.entry('directory_users', mergeDirectoryUsers)],
  events,
});
