import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import { iso } from '../../lib/time.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { MembershipEntity } from '../organizations/membership.entity.ts';
import type { MemberAddCheck, SubscriptionSummarySource } from '../organizations/organizations.hooks.ts';
import type { PlanRecord, SubscriptionRecord } from './billing.schema.ts';
import { type Plan, PlanEntity } from './plan.entity.ts';
import { SubscriptionEntity } from './subscription.entity.ts';

const toPlanRecord = (plan: Plan): PlanRecord => ({
  id: plan.id,
  key: plan.key,
  name: plan.name,
  // the entity types the column as string; only the schema's values are ever written to it.
  interval: plan.interval as PlanRecord['interval'],
  currency: plan.currency,
  price_cents: plan.priceCents,
  per_seat_cents: plan.perSeatCents,
  trial_days: plan.trialDays,
  archived_at: iso(plan.archivedAt),
  created_at: plan.createdAt.toISOString(),
});

/** A plan's interval as a PostgreSQL interval expression over its `interval` column (alias `p`). */
const PERIOD_SQL = `(case p.interval when 'year' then interval '1 year' else interval '1 month' end)`;

async function findPlan(em: EntityManager, applicationId: string, id: string): Promise<Plan> {
  const plan = await em.findOne(PlanEntity, { id, application: applicationId });
  if (!plan) throw notFound('Plan');
  return plan;
}

const keyTaken = () => new AppError('conflict', 'A plan with this key already exists');

export async function createPlan(
  ctx: TenantContext,
  input: {
    key: string;
    name: string;
    interval: 'month' | 'year';
    currency: string;
    price_cents: number;
    per_seat_cents: number;
    trial_days: number;
  },
) {
  const em = ctx.em.fork({ keepTransactionContext: true });
  const plan = em.create(PlanEntity, {
    id: newId(),
    application: ctx.application.id,
    key: input.key,
    name: input.name,
    interval: input.interval,
    currency: input.currency,
    priceCents: input.price_cents,
    perSeatCents: input.per_seat_cents,
    trialDays: input.trial_days,
    archivedAt: null,
  });
  try {
    await em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw keyTaken();
    throw error;
  }
  return toPlanRecord(plan);
}

export async function listPlans(ctx: TenantContext) {
  const plans = await ctx.em.find(
    PlanEntity,
    { application: ctx.application.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return plans.map(toPlanRecord);
}

export const getPlan = async (ctx: TenantContext, id: string) => toPlanRecord(await findPlan(ctx.em, ctx.application.id, id));

/**
 * Prices and the trial apply to what happens next (new subscriptions, renewals); `archived` retires a plan without
 * touching its subscriptions.
 */
export async function updatePlan(
  ctx: TenantContext,
  input: { id: string; name?: string; price_cents?: number; per_seat_cents?: number; trial_days?: number; archived?: boolean },
) {
  const plan = await findPlan(ctx.em, ctx.application.id, input.id);
  if (input.name !== undefined) plan.name = input.name;
  if (input.price_cents !== undefined) plan.priceCents = input.price_cents;
  if (input.per_seat_cents !== undefined) plan.perSeatCents = input.per_seat_cents;
  if (input.trial_days !== undefined) plan.trialDays = input.trial_days;
  if (input.archived !== undefined) plan.archivedAt = input.archived ? (plan.archivedAt ?? new Date()) : null;
  await ctx.em.flush();
  return toPlanRecord(plan);
}

/** A plan nobody ever subscribed to goes; one with subscriptions (their history included) is archived instead: 409. */
export async function deletePlan(ctx: TenantContext, id: string) {
  const plan = await findPlan(ctx.em, ctx.application.id, id);
  if (await ctx.em.count(SubscriptionEntity, { plan: plan.id })) {
    throw new AppError('conflict', 'The plan has subscriptions: archive it instead (PATCH archived: true)');
  }
  ctx.em.remove(plan);
  await ctx.em.flush();
  return { id, deleted: true as const };
}

interface SubscriptionRow {
  id: string;
  organization_id: string;
  organization_name: string;
  plan_id: string;
  plan_key: string;
  plan_name: string;
  status: SubscriptionRecord['status'];
  interval: SubscriptionRecord['interval'];
  currency: string;
  price_cents: number;
  per_seat_cents: number;
  seats: number;
  current_period_end: string | Date;
  canceled_at: string | Date | null;
}

const toSubscriptionRecord = (row: SubscriptionRow): SubscriptionRecord => ({
  id: row.id,
  organization_id: row.organization_id,
  organization_name: row.organization_name,
  plan_id: row.plan_id,
  plan_key: row.plan_key,
  plan_name: row.plan_name,
  status: row.status,
  interval: row.interval,
  currency: row.currency,
  price_cents: Number(row.price_cents),
  per_seat_cents: Number(row.per_seat_cents),
  seats: Number(row.seats),
  current_period_end: new Date(row.current_period_end).toISOString(),
  canceled_at: row.canceled_at ? new Date(row.canceled_at).toISOString() : null,
});

/** Subscriptions with their organization's name and their plan's terms (S13), newest first. */
async function subscriptions(em: EntityManager, where: string, params: unknown[]): Promise<SubscriptionRecord[]> {
  const rows = await em.execute<SubscriptionRow[]>(
    `select s.id, s.organization_id, o.name as organization_name, s.plan_id, p.key as plan_key, p.name as plan_name,
            s.status, p.interval, p.currency, p.price_cents, p.per_seat_cents, s.seats, s.current_period_end, s.canceled_at
       from billing_subscriptions s
       join organizations o on o.id = s.organization_id
       join billing_plans p on p.id = s.plan_id
      where ${where}
      order by s.created_at desc, s.id desc`,
    params,
  );
  return rows.map(toSubscriptionRecord);
}

async function subscriptionRecord(em: EntityManager, applicationId: string, id: string): Promise<SubscriptionRecord> {
  const [record] = await subscriptions(em, 's.application_id = ? and s.id = ?', [applicationId, id]);
  if (!record) throw notFound('Subscription');
  return record;
}

/** S13: every organization subscription of the application, canceled ones included. */
export const listSubscriptions = (ctx: TenantContext) => subscriptions(ctx.em, 's.application_id = ?', [ctx.application.id]);

export const getSubscription = (ctx: TenantContext, id: string) => subscriptionRecord(ctx.em, ctx.application.id, id);

/**
 * Locks the organization row: a member insert holds a key-share lock on it (its foreign key) until it commits, so
 * with this lock held every member add has either committed (and is counted) or waits for this transaction (and then
 * meets the seat check). Answers how many members it has.
 */
async function lockOrganizationMembers(em: EntityManager, applicationId: string, organizationId: string): Promise<number> {
  const locked = await em.execute('select id from organizations where id = ? and application_id = ? for update', [
    organizationId,
    applicationId,
  ]);
  if (!locked.length) throw notFound('Organization');
  return em.count(MembershipEntity, { organization: organizationId });
}

const seatsBelowMembers = (members: number) =>
  new AppError('seat_limit_reached', `The organization has ${members} members: seats cannot be fewer`);

function usablePlan(plan: Plan): Plan {
  if (plan.archivedAt) throw new AppError('conflict', 'The plan is archived: it takes no new subscriptions');
  return plan;
}

const oneLiveSubscription = () => new AppError('conflict', 'The organization already has a live subscription');

/** A new subscription: `trialing` until the end of the plan's trial, else `active` for one interval. */
export async function createSubscription(ctx: TenantContext, input: { organization_id: string; plan_id: string; seats: number }) {
  const applicationId = ctx.application.id;
  try {
    return await ctx.em.transactional(async (em) => {
      const members = await lockOrganizationMembers(em, applicationId, input.organization_id);
      const plan = usablePlan(await findPlan(em, applicationId, input.plan_id));
      if (input.seats < members) throw seatsBelowMembers(members);
      const id = newId();
      const trialing = plan.trialDays > 0;
      await em.execute(
        `insert into billing_subscriptions (id, application_id, organization_id, plan_id, status, seats, current_period_end,
                                            canceled_at, cancel_at_period_end, created_at, updated_at)
         select ?, ?, ?, p.id, ?, ?, now() + ${trialing ? `make_interval(days => p.trial_days)` : PERIOD_SQL}, null, false, now(), now()
           from billing_plans p where p.id = ?`,
        [id, applicationId, input.organization_id, trialing ? 'trialing' : 'active', input.seats, plan.id],
      );
      const record = await subscriptionRecord(em, applicationId, id);
      recordEvent(em, applicationId, 'subscription.created', record);
      await em.flush();
      return record;
    });
  } catch (error) {
    // The partial unique index (one live subscription per organization) decides concurrent creations.
    if (error instanceof UniqueConstraintViolationException) throw oneLiveSubscription();
    throw error;
  }
}

/** The subscription row, locked for the rest of the transaction; a canceled one cannot change any more. */
async function lockLiveSubscription(em: EntityManager, applicationId: string, id: string) {
  const [row] = await em.execute<Array<{ organization_id: string; status: string }>>(
    'select organization_id, status from billing_subscriptions where id = ? and application_id = ? for update',
    [id, applicationId],
  );
  if (!row) throw notFound('Subscription');
  if (row.status === 'canceled') throw new AppError('conflict', 'The subscription is canceled');
  return row;
}

/**
 * Seats, plan and status (`active` | `past_due`, as a payment provider reports it; `active` ends a trial and starts a
 * paid period). Fewer seats than members is 409 `seat_limit_reached`.
 */
export async function updateSubscription(
  ctx: TenantContext,
  input: { id: string; seats?: number; plan_id?: string; status?: 'active' | 'past_due' },
) {
  const applicationId = ctx.application.id;
  return ctx.em.transactional(async (em) => {
    const current = await lockLiveSubscription(em, applicationId, input.id);
    const sets: string[] = ['updated_at = now()'];
    const params: unknown[] = [];
    if (input.seats !== undefined) {
      const members = await lockOrganizationMembers(em, applicationId, current.organization_id);
      if (input.seats < members) throw seatsBelowMembers(members);
      sets.push('seats = ?');
      params.push(input.seats);
    }
    if (input.plan_id !== undefined) {
      sets.push('plan_id = ?');
      params.push(usablePlan(await findPlan(em, applicationId, input.plan_id)).id);
    }
    if (input.status !== undefined) {
      if (current.status === 'trialing' && input.status === 'active') sets.push(`current_period_end = now() + ${PERIOD_SQL}`);
      sets.push('status = ?');
      params.push(input.status);
    }
    await em.execute(
      `update billing_subscriptions s set ${sets.join(', ')}
         from billing_plans p where s.id = ? and p.id = ${input.plan_id !== undefined ? '?' : 's.plan_id'}`,
      [...params, input.id, ...(input.plan_id !== undefined ? [input.plan_id] : [])],
    );
    const record = await subscriptionRecord(em, applicationId, input.id);
    recordEvent(em, applicationId, 'subscription.updated', record);
    await em.flush();
    return record;
  });
}

/** Ends it now (`canceled`), or with `at_period_end` at `current_period_end` (housekeeping ends it then). */
export async function cancelSubscription(ctx: TenantContext, input: { id: string; at_period_end: boolean }) {
  const applicationId = ctx.application.id;
  return ctx.em.transactional(async (em) => {
    await lockLiveSubscription(em, applicationId, input.id);
    await em.execute(
      input.at_period_end
        ? `update billing_subscriptions set canceled_at = now(), cancel_at_period_end = true, updated_at = now() where id = ?`
        : `update billing_subscriptions set status = 'canceled', canceled_at = now(), cancel_at_period_end = false, updated_at = now()
            where id = ?`,
      [input.id],
    );
    const record = await subscriptionRecord(em, applicationId, input.id);
    recordEvent(em, applicationId, input.at_period_end ? 'subscription.updated' : 'subscription.canceled', record);
    await em.flush();
    return record;
  });
}

const DUE_BATCH = 500;

/**
 * Housekeeping: every live subscription whose period is over moves on — a trial becomes `active` for one interval, a
 * paid period renews (a `past_due` one stays `past_due` until the provider reports otherwise), and a cancellation at
 * the period's end takes effect. Each batch and its events are one transaction; rows another process is moving are
 * skipped (it owns them), and a period far behind moves one interval per pass until it is current.
 */
export async function advanceSubscriptionPeriods(em: EntityManager): Promise<number> {
  let moved = 0;
  for (;;) {
    const batch = await em.transactional(async (tx) => {
      const rows = await tx.execute<Array<{ id: string; application_id: string; status: string }>>(
        `with due as (
           select id from billing_subscriptions
            where status <> 'canceled' and current_period_end <= now()
            order by current_period_end limit ${DUE_BATCH} for update skip locked
         )
         update billing_subscriptions s set
           status = case when s.cancel_at_period_end then 'canceled' when s.status = 'trialing' then 'active' else s.status end,
           current_period_end = case when s.cancel_at_period_end then s.current_period_end
                                     else s.current_period_end + ${PERIOD_SQL} end,
           updated_at = now()
           from due, billing_plans p
          where s.id = due.id and p.id = s.plan_id
          returning s.id, s.application_id, s.status`,
      );
      if (!rows.length) return 0;
      const records = await subscriptions(
        tx,
        `s.id in (${rows.map(() => '?').join(', ')})`,
        rows.map((r) => r.id),
      );
      const applicationOf = new Map(rows.map((r) => [r.id, r.application_id]));
      for (const record of records) {
        const type = record.status === 'canceled' ? 'subscription.canceled' : 'subscription.updated';
        const applicationId = applicationOf.get(record.id);
        if (applicationId) recordEvent(tx, applicationId, type, record);
      }
      await tx.flush();
      return rows.length;
    });
    moved += batch;
    if (batch === 0) return moved;
  }
}

/**
 * Seats (CONTRACT §5): while an organization's subscription is live, a member beyond `seats` is 409. The subscription
 * row is locked first, so concurrent additions on any number of processes are judged one after another, each counting
 * the members the ones before it committed.
 */
export const checkSeats: MemberAddCheck['check'] = async (em, { organizationId }) => {
  const [live] = await em.execute<Array<{ seats: number }>>(
    `select seats from billing_subscriptions where organization_id = ? and status <> 'canceled' for update`,
    [organizationId],
  );
  if (!live) return;
  const members = await em.count(MembershipEntity, { organization: organizationId });
  if (members >= Number(live.seats)) {
    throw new AppError('seat_limit_reached', `Every seat of the subscription is taken (${live.seats})`);
  }
};

/** Over the organization's row `o`: it has no live subscription, so `checkSeats` has nothing to judge. */
export const NO_LIVE_SUBSCRIPTION_SQL = `not exists (select 1 from billing_subscriptions s where s.organization_id = o.id and s.status <> 'canceled')`;

export const billingSubscriptionSummary: SubscriptionSummarySource = async (em, organizationIds) => {
  const rows = await em.execute<
    Array<{
      organization_id: string;
      id: string;
      plan_id: string;
      plan_key: string;
      status: string;
      seats: number;
      current_period_end: Date;
      canceled_at: Date | null;
    }>
  >(
    `select s.organization_id, s.id, s.plan_id, p.key as plan_key, s.status, s.seats, s.current_period_end, s.canceled_at
       from billing_subscriptions s join billing_plans p on p.id = s.plan_id
      where s.organization_id in (select value::uuid from json_array_elements_text(?::json)) and s.status <> 'canceled'`,
    [JSON.stringify(organizationIds)],
  );
  return new Map(
    rows.map((row) => [
      row.organization_id,
      {
        id: row.id,
        plan_id: row.plan_id,
        plan_key: row.plan_key,
        // the column is text in the SELECT's row; only the schema's values are ever written to it.
        status: row.status as SubscriptionRecord['status'],
        seats: Number(row.seats),
        current_period_end: new Date(row.current_period_end).toISOString(),
        canceled_at: row.canceled_at ? new Date(row.canceled_at).toISOString() : null,
      },
    ]),
  );
};
