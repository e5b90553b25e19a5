import { defineModule } from '../../lib/modules.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { IdentityEntity } from './identity.entity.ts';
import { UserEntity } from './user.entity.ts';
import { mergeIdentities } from './users.merge.ts';
import { userProcedures } from './users.router.ts';

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
});
