import { z } from 'zod';
import { IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { RemovedFactorSchema, UserFactorParamsSchema, UserFactorSchema } from './factors.schema.ts';
import { listUserFactors, removeUserFactor } from './factors.service.ts';

const tags = ['Users'];

/** `users.factors.*`: support's view of a user's passkeys and second factors (mounted under users by the root). */
export const userFactorsRouter = router({
  list: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users/{id}/factors', tags, summary: "A user's passkeys and second factors" } })
    .input(IdParamSchema)
    .output(z.array(UserFactorSchema))
    .query(({ ctx, input }) => listUserFactors(ctx, input.id)),
  remove: secretKeyProcedure('users:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/users/{id}/factors/{factor_id}',
        tags,
        summary: 'Remove a passkey or second factor (support)',
        description: 'Also revokes every session of the user, and tells them by mail.',
      },
    })
    .input(UserFactorParamsSchema)
    .output(RemovedFactorSchema)
    .mutation(({ ctx, input }) => removeUserFactor(ctx, input.id, input.factor_id)),
});
