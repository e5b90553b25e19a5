import type { EntityManager } from '../../db/orm.ts';
import { type Hooks, Registry } from '../../lib/modules.ts';
import type { SubscriptionSummary } from './organizations.schema.ts';

/**
 * What a module above organizations checks before a member is added (billing: the seat limit). A check runs inside
 * the transaction that inserts the membership, before the insert, and throws an `AppError` to refuse it; it must be
 * race-safe across processes (lock the row it judges by, then count).
 */
export interface MemberAddCheck {
  check: (em: EntityManager, input: { applicationId: string; organizationId: string }) => Promise<void>;
  /**
   * A SQL condition over the organization's row `o` (no parameters) that holds when the check has nothing to judge
   * (billing: no live subscription): a check that declares one lets a SCIM create add the member in one statement
   * (which adds it only while the condition holds, and leaves it to the transaction running `check` otherwise).
   */
  clearSql?: string;
}

export const memberAddChecks = new Registry<MemberAddCheck>('member add check');

export async function runMemberAddChecks(
  hooks: Hooks,
  em: EntityManager,
  input: { applicationId: string; organizationId: string },
) {
  for (const { check } of hooks.get(memberAddChecks)) await check(em, input);
}

/**
 * The member add checks as one SQL condition over the organization's row `o` that holds when none of them has
 * anything to judge; null when one of them declares no such condition (its `check` must run).
 */
export function memberAddChecksClearSql(hooks: Hooks): string | null {
  const checks = hooks.get(memberAddChecks);
  if (checks.some(({ clearSql }) => clearSql === undefined)) return null;
  return checks.map(({ clearSql }) => `(${clearSql})`).join(' and ') || 'true';
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

/**
 * What a module above organizations does when a membership is suspended by its directory (sessions: revoke the
 * sessions whose active organization it is), inside the suspension's transaction.
 */
export type MemberSuspendStep = (
  em: EntityManager,
  input: { applicationId: string; organizationId: string; userId: string },
) => Promise<void>;

export const memberSuspendSteps = new Registry<MemberSuspendStep>('member suspend step');
