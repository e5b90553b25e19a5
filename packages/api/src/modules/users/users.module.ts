import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { IdentityEntity } from './identity.entity.ts';
import { UserEntity } from './user.entity.ts';
import { mergeIdentities } from './users.merge.ts';
import { userProcedures } from './users.router.ts';
import { DeletedUserEventSchema, MergedUsersEventSchema, UserSchema } from './users.schema.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'user.created': UserSchema,
  'user.updated': UserSchema,
  'user.deleted': DeletedUserEventSchema,
  'user.merged': MergedUsersEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Users and their identities; owns the merge, ban and delete steps the modules above fill. */
export const usersModule = defineModule({
  name: 'users',
  entities: [UserEntity, IdentityEntity],
  procedures: { users: userProcedures },
  tag: {
    name: 'Users',
    description:
      'The users of an application: create, search, update, ban, merge, sign out everywhere, support view of their factors.',
  },
  hooks: [mergeSteps.entry('identities', mergeIdentities)],
  events,
});
