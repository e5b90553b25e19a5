import { z } from 'zod';
import { IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { applicationStats } from './stats.service.ts';

export const statsRouter = router({
  get: secretKeyProcedure('stats:read')
    .meta({
      openapi: { method: 'GET', path: '/v1/applications/{id}/stats', tags: ['Applications'], summary: 'Headline statistics' },
    })
    .input(IdParamSchema)
    .output(
      z
        .object({
          active_sessions: z.number().int(),
          active_users: z.number().int(),
          sign_ins_24h: z.number().int(),
          has_traffic: z.boolean(),
        })
        .meta({ id: 'ApplicationStats' }),
    )
    .query(({ ctx, input }) => applicationStats(ctx, input.id)),
});
