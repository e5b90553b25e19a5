import { defineEntity, p } from '@mikro-orm/core';

/** rate-limiter-flexible's PostgreSQL table, created by our migrations rather than by the library at run time. */
export const RateLimitEntity = defineEntity({
  name: 'RateLimit',
  tableName: 'rate_limits',
  properties: {
    key: p.string().length(255).primary(),
    points: p.integer().default(0),
    expire: p.bigint().nullable(),
  },
});
