import { defineModule } from '../../lib/modules.ts';
import { deleteSteps } from '../users/users.hooks.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { authzRouter } from './authz.router.ts';
import { deleteAuthzTuples, mergeAuthzTuples } from './authz.service.ts';
import { AuthzTupleEntity } from './authz-tuple.entity.ts';

/** Relationship tuples and their checks. */
export const authzModule = defineModule({
  name: 'authz',
  entities: [AuthzTupleEntity],
  procedures: { authz: authzRouter },
  tag: {
    name: 'Authorization',
    description:
      'Relationship tuples (Zanzibar-style) in the same database as users and organizations: write, list, check, expand, lookup; `organization:<id>#member` and `#<role>` resolve from the membership table.',
  },
  hooks: [mergeSteps.entry('authz_tuples', mergeAuthzTuples), deleteSteps.entry('authz_tuples', deleteAuthzTuples)],
});
