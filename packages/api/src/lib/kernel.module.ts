import { IdempotencyKeyEntity } from '../db/idempotency-key.entity.ts';
import { RateLimitEntity } from '../db/rate-limit.entity.ts';
import { purgeSteps } from './housekeeping.ts';
import { purgeIdempotencyKeys } from './idempotency.ts';
import { defineModule } from './modules.ts';
import { purgeRateLimits } from './rate-limit.ts';

/** The kernel's own tables: idempotency keys and the PostgreSQL rate-limit counters. */
export const kernelModule = defineModule({
  name: 'kernel',
  entities: [RateLimitEntity, IdempotencyKeyEntity],
  hooks: [purgeSteps.entry('idempotency_keys', purgeIdempotencyKeys), purgeSteps.entry('rate_limits', purgeRateLimits)],
});
