import { SCOPES, type Scope } from '../../lib/scopes.ts';

/** An operator's roles, weakest first (`roleOf` answers the strongest an operator holds for an application). */
export const OPERATOR_ROLES = ['viewer', 'support', 'admin', 'owner'] as const;
export type OperatorRoleName = (typeof OPERATOR_ROLES)[number];

const READS: readonly Scope[] = SCOPES.filter((scope) => scope.endsWith(':read'));

/**
 * What each role may do in an application, as the secret-key scopes a key would need (`grants` judges them): a console
 * call is checked against its procedure's scope exactly as a key's is. docs/operators.md shows this table.
 *
 * - viewer: every `:read` scope.
 * - support: viewer, and `users:write` — ban and unban, revoke sessions, reset a user's factors, edit a profile (the
 *   scope is coarse: it also covers creating, merging and deleting users; there is no narrower one).
 * - admin: everything in the application (`*`): settings, keys, webhooks, organizations, SSO…
 * - owner: as admin, and deleting the application (an operator route; `operatorGrant`).
 *
 * Managing operators and creating applications are no application's scope: only instance-wide owners (and the
 * operator token) may.
 */
export const ROLE_SCOPES: Readonly<Record<OperatorRoleName, readonly Scope[]>> = {
  viewer: READS,
  support: [...READS, 'users:write'],
  admin: ['*'],
  owner: ['*'],
};

/** The strongest of `roles` (undefined for none). */
export function strongestRole(roles: readonly string[]): OperatorRoleName | undefined {
  let best = -1;
  for (const role of roles) best = Math.max(best, OPERATOR_ROLES.indexOf(role as OperatorRoleName)); // an unknown text ranks -1
  return best < 0 ? undefined : OPERATOR_ROLES[best];
}
