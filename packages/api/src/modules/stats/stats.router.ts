import { z } from 'zod';
import { IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { DailyStatsInputSchema, DailyStatsSchema } from './stats.schema.ts';
import { applicationStats } from './stats.service.ts';
import { dailyStats } from './stats-daily.service.ts';

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
  daily: secretKeyProcedure('stats:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/applications/{id}/stats/daily',
        tags: ['Applications'],
        summary: 'Daily statistics',
        description:
          'Per UTC day from `from` to `to` (both included; default the last 30 days, at most 366): sign-ins by first ' +
          'factor, active users, new users, refused sign-ins and webhook deliveries; and the monthly active users of ' +
          'the 30 days ending at `to`.',
      },
    })
    .input(DailyStatsInputSchema)
    .output(DailyStatsSchema)
    .query(({ ctx, input }) => dailyStats(ctx, input)),
});
