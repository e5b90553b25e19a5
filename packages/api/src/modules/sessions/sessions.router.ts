import { IdParamSchema } from '../../lib/schemas.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { RevokedSessionsSchema } from './sessions.schema.ts';
import { revokeSessionsOfUser } from './sessions.service.ts';

const tags = ['Users'];

/** `users.revokeSessions` (mounted under users by the root router): sessions are above users. */
export const revokeUserSessionsProcedure = secretKeyProcedure('users:write')
  .meta({ openapi: { method: 'POST', path: '/v1/users/{id}/sessions/revoke', tags, summary: 'Sign the user out everywhere' } })
  .input(IdParamSchema)
  .output(RevokedSessionsSchema)
  .mutation(({ ctx, input }) => revokeSessionsOfUser(ctx, input.id));
