import { defineEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';

/**
 * The daily statistics of a finished UTC day, rolled up by housekeeping (`rollUpStatsDays`) so that the dashboard's
 * query reads one row a day instead of counting the day's sessions, events and deliveries again. Read and written with
 * SQL only (`stats-daily.service.ts`); a day not rolled up yet is counted live.
 */
export const StatsDayEntity = defineEntity({
  name: 'StatsDay',
  tableName: 'stats_days',
  properties: {
    application: () => p.manyToOne(ApplicationEntity).mapToPk().primary().deleteRule('cascade'),
    day: p.string().columnType('date').primary(),
    signInsMagicLink: p.integer(),
    signInsPasskey: p.integer(),
    signInsFederated: p.integer(),
    signInsOther: p.integer(),
    activeUsers: p.integer(),
    newUsers: p.integer(),
    failedSignIns: p.integer(),
    webhooksSucceeded: p.integer(),
    webhooksFailed: p.integer(),
    /** Deliveries still tried when the day was rolled up: such a day is rolled up again until none is. */
    webhooksPending: p.integer(),
    computedAt: p.datetime(),
  },
});
