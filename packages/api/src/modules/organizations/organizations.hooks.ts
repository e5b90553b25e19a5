import type { EntityManager } from '../../db/orm.ts';
import { type Hooks, Registry } from '../../lib/modules.ts';
import type { SubscriptionSummary } from './organizations.schema.ts';

/**
 * What a module above organizations checks before a member is added (billing: the seat limit). A check runs inside
 * the transaction that inserts the membership, before the insert, and throws an `AppError` to refuse it; it must be
 * race-safe across processes (lock the row it judges by, then count).
 */
export type MemberAddCheck = (em: EntityManager, input: { applicationId: string; organizationId: string }) => Promise<void>;

export const memberAddChecks = new Registry<MemberAddCheck>('member add check');

export async function runMemberAddChecks(
  hooks: Hooks,
  em: EntityManager,
  input: { applicationId: string; organizationId: string },
) {
  for (const check of hooks.get(memberAddChecks)) await check(em, input);
}

/**
 * Where each organization's `subscription` summary comes from (billing fills it; none without billing): the live
 * subscription of each of `organizationIds` that has one, by organization id.
 */
export type SubscriptionSummarySource = (
  em: EntityManager,
  organizationIds: string[],
) => Promise<Map<string, SubscriptionSummary>>;

export const subscriptionSummarySources = new Registry<SubscriptionSummarySource>('subscription summary source', {
  single: true,
});

export async function subscriptionSummaries(hooks: Hooks, em: EntityManager, organizationIds: string[]) {
  const [source] = hooks.get(subscriptionSummarySources);
  return source && organizationIds.length ? source(em, organizationIds) : new Map<string, SubscriptionSummary>();
}
