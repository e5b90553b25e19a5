import type { EntityManager } from '../../db/orm.ts';
import type { SubscriptionSummary } from './organizations.schema.ts';

/**
 * What a module above organizations checks before a member is added (billing: the seat limit). A check runs inside
 * the transaction that inserts the membership, before the insert, and throws an `AppError` to refuse it; it must be
 * race-safe across processes (lock the row it judges by, then count).
 */
export type MemberAddCheck = (em: EntityManager, input: { applicationId: string; organizationId: string }) => Promise<void>;

const memberAddChecks = new Map<string, MemberAddCheck>();

export function registerMemberAddCheck(name: string, check: MemberAddCheck): void {
  if (memberAddChecks.has(name)) throw new Error(`Member add check ${name} is registered twice`);
  memberAddChecks.set(name, check);
}

export async function runMemberAddChecks(em: EntityManager, input: { applicationId: string; organizationId: string }) {
  for (const check of memberAddChecks.values()) await check(em, input);
}

/**
 * Where each organization's `subscription` summary comes from (billing fills it; none without billing): the live
 * subscription of each of `organizationIds` that has one, by organization id.
 */
export type SubscriptionSummarySource = (
  em: EntityManager,
  organizationIds: string[],
) => Promise<Map<string, SubscriptionSummary>>;

let summarySource: SubscriptionSummarySource | null = null;

export function registerSubscriptionSummarySource(source: SubscriptionSummarySource): void {
  if (summarySource) throw new Error('A subscription summary source is registered twice');
  summarySource = source;
}

export const subscriptionSummaries = async (em: EntityManager, organizationIds: string[]) =>
  summarySource && organizationIds.length ? summarySource(em, organizationIds) : new Map<string, SubscriptionSummary>();
