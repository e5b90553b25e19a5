import { skipToken, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { curl, EmptyState } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { when } from '../../format.ts';

type Organization = Outputs['organizations']['get'];
type Plan = Outputs['billing']['plans']['list'][number];

const money = (cents: number, currency: string) =>
  new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(cents / 100);
const priceOf = (plan: Pick<Plan, 'price_cents' | 'per_seat_cents' | 'currency' | 'interval'>) =>
  `${money(plan.price_cents, plan.currency)} a ${plan.interval}` +
  (plan.per_seat_cents > 0 ? ` + ${money(plan.per_seat_cents, plan.currency)} a seat` : '');
/** Seats as the API takes them: a whole number from 1 to 1,000,000. */
const seatsOf = (value: string) => {
  const n = Number(value);
  return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? n : undefined;
};

/**
 * The organization's plan and seats: seats used against the subscription's limit, change the plan or the seats,
 * cancel (now or at the end of the period); without a live subscription, subscribe it to a plan.
 */
export function Subscription({ organization }: { organization: Organization }) {
  const trpc = app.useTRPC();
  const plans = useQuery(trpc.billing.plans.list.queryOptions());
  const summary = organization.subscription;
  const subscription = useQuery(trpc.billing.subscriptions.get.queryOptions(summary ? { id: summary.id } : skipToken));
  const offered = plans.data?.filter((p) => p.archived_at === null) ?? [];

  return (
    <div>
      <h2>Subscription and seats</h2>
      <ErrorNotice error={plans.error} title="The plans could not be listed" />
      <ErrorNotice error={subscription.error} title="The subscription could not be read" />
      {summary && subscription.isPending && <p role="status">Loading the subscription…</p>}
      {summary && subscription.data && (
        <>
          <dl className="facts">
            <dt>Plan</dt>
            <dd>
              {subscription.data.plan_name} (<code>{subscription.data.plan_key}</code>), {priceOf(subscription.data)}
            </dd>
            <dt>Status</dt>
            <dd>
              <span className="badge">{subscription.data.status}</span>
              {subscription.data.canceled_at && subscription.data.status !== 'canceled' && (
                <span className="meta"> ends {when(subscription.data.current_period_end)}</span>
              )}
            </dd>
            <dt>Seats</dt>
            <dd>
              {organization.member_count} used of {subscription.data.seats}
              {organization.member_count >= subscription.data.seats && (
                <span className="meta"> — every seat is taken: a new member is refused</span>
              )}
            </dd>
            <dt>{subscription.data.status === 'trialing' ? 'Trial ends' : 'Period ends'}</dt>
            <dd>{when(subscription.data.current_period_end)}</dd>
          </dl>
          <ChangeSubscription
            key={`${subscription.data.plan_id}:${subscription.data.seats}`}
            organization={organization}
            subscription={subscription.data}
            plans={offered}
          />
        </>
      )}
      {!summary && (
        <>
          <p>
            No live subscription: the organization has {organization.member_count} member
            {organization.member_count === 1 ? '' : 's'} and no seat limit.
          </p>
          {plans.data && offered.length === 0 && (
            <EmptyState
              title="No plan to subscribe to"
              cli="npx gatehouse billing plans create team --name Team --price 2900 --per-seat 900"
              curl={curl('/v1/billing/plans', {
                method: 'POST',
                body: '{"key": "team", "name": "Team", "interval": "month", "currency": "USD", "price_cents": 2900}',
              })}
            >
              <p>Create a plan first; then subscribe the organization here.</p>
            </EmptyState>
          )}
          {offered.length > 0 && <Subscribe organization={organization} plans={offered} />}
        </>
      )}
    </div>
  );
}

function PlanChoice({ plans, value, onChange }: { plans: Plan[]; value: string; onChange: (id: string) => void }) {
  return (
    <RadioGroup className="field radios" isRequired value={value} onChange={onChange}>
      <Label>Plan</Label>
      {plans.map((plan) => (
        <Radio key={plan.id} value={plan.id}>
          <span>
            {plan.name} (<code>{plan.key}</code>): {priceOf(plan)}
            {plan.trial_days > 0 ? `, ${plan.trial_days} days' trial` : ''}
          </span>
        </Radio>
      ))}
    </RadioGroup>
  );
}

function useRefresh(orgId: string) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  return () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.organizations.get.queryKey({ id: orgId }) }),
      queryClient.invalidateQueries({ queryKey: trpc.billing.subscriptions.pathKey() }),
    ]);
}

function ChangeSubscription({
  organization,
  subscription,
  plans,
}: {
  organization: Organization;
  subscription: Outputs['billing']['subscriptions']['get'];
  plans: Plan[];
}) {
  const trpc = app.useTRPC();
  const refresh = useRefresh(organization.id);
  const [planId, setPlanId] = useState(subscription.plan_id);
  const [seats, setSeats] = useState(String(subscription.seats));
  const [said, setSaid] = useState('');
  const update = useMutation(
    trpc.billing.subscriptions.update.mutationOptions({
      onSuccess: (saved) => {
        setSaid(`Saved: ${saved.plan_name}, ${saved.seats} seats.`);
        return refresh();
      },
    }),
  );
  const cancel = useMutation(
    trpc.billing.subscriptions.cancel.mutationOptions({
      onSuccess: (saved) => {
        setSaid(saved.status === 'canceled' ? 'The subscription was canceled.' : `It ends ${when(saved.current_period_end)}.`);
        return refresh();
      },
    }),
  );
  const wanted = seatsOf(seats);
  // The current plan stays a choice even when it is archived (it keeps its subscriptions).
  const choices = plans.some((p) => p.id === subscription.plan_id)
    ? plans
    : [
        {
          id: subscription.plan_id,
          key: subscription.plan_key,
          name: subscription.plan_name,
          interval: subscription.interval,
          currency: subscription.currency,
          price_cents: subscription.price_cents,
          per_seat_cents: subscription.per_seat_cents,
          trial_days: 0,
          archived_at: null,
          created_at: '',
        } satisfies Plan,
        ...plans,
      ];
  const live = subscription.status !== 'canceled';
  return (
    <>
      {live && (
        <section className="panel" aria-labelledby="change-subscription">
          <h3 id="change-subscription">Change the plan or the seats</h3>
          <Form
            onSubmit={(event) => {
              event.preventDefault();
              if (wanted === undefined) return;
              update.mutate({
                id: subscription.id,
                ...(planId !== subscription.plan_id ? { plan_id: planId } : {}),
                ...(wanted !== subscription.seats ? { seats: wanted } : {}),
              });
            }}
          >
            <PlanChoice plans={choices} value={planId} onChange={setPlanId} />
            <SeatsField value={seats} onChange={setSeats}>
              At least {Math.max(organization.member_count, 1)}: seats cannot be fewer than the members.
            </SeatsField>
            <Button
              type="submit"
              className="button primary"
              isDisabled={
                update.isPending || wanted === undefined || (planId === subscription.plan_id && wanted === subscription.seats)
              }
            >
              {update.isPending ? 'Saving…' : 'Save the subscription'}
            </Button>
          </Form>
          <ErrorNotice error={update.error} title="The subscription was not changed" />
        </section>
      )}
      <p role="status" className="status">
        {said}
      </p>
      {live && (
        <div className="row-actions">
          {!subscription.canceled_at && (
            <ConfirmButton
              label="Cancel at the end of the period"
              title="Cancel at the end of the period?"
              confirmLabel="Cancel at the end of the period"
              isDisabled={cancel.isPending}
              onConfirm={() => cancel.mutate({ id: subscription.id, at_period_end: true })}
            >
              <p>The subscription stays live until {when(subscription.current_period_end)}, then ends.</p>
            </ConfirmButton>
          )}
          <ConfirmButton
            label="Cancel now"
            title="Cancel the subscription now?"
            confirmLabel="Cancel now"
            isDisabled={cancel.isPending}
            onConfirm={() => cancel.mutate({ id: subscription.id, at_period_end: false })}
          >
            <p>It ends at once; the organization keeps its members, with no seat limit.</p>
          </ConfirmButton>
        </div>
      )}
      <ErrorNotice error={cancel.error} title="The subscription was not canceled" />
    </>
  );
}

function Subscribe({ organization, plans }: { organization: Organization; plans: Plan[] }) {
  const trpc = app.useTRPC();
  const refresh = useRefresh(organization.id);
  const [planId, setPlanId] = useState('');
  const [seats, setSeats] = useState(String(Math.max(organization.member_count, 1)));
  const create = useMutation(trpc.billing.subscriptions.create.mutationOptions({ onSuccess: refresh }));
  const wanted = seatsOf(seats);
  return (
    <section className="panel" aria-labelledby="subscribe">
      <h3 id="subscribe">Subscribe to a plan</h3>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          if (wanted === undefined || !planId) return;
          create.mutate({ organization_id: organization.id, plan_id: planId, seats: wanted });
        }}
      >
        <PlanChoice plans={plans} value={planId} onChange={setPlanId} />
        <SeatsField value={seats} onChange={setSeats}>
          At least {Math.max(organization.member_count, 1)}: a member beyond the seats is refused.
        </SeatsField>
        <Button type="submit" className="button primary" isDisabled={create.isPending || wanted === undefined || !planId}>
          {create.isPending ? 'Subscribing…' : 'Subscribe'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The organization was not subscribed" />
    </section>
  );
}

/** The seats of a subscription: a whole number (`seatsOf`), with what its lower bound means (`children`). */
function SeatsField({ value, onChange, children }: { value: string; onChange: (value: string) => void; children: ReactNode }) {
  return (
    <TextField
      className="field"
      isRequired
      inputMode="numeric"
      value={value}
      onChange={onChange}
      isInvalid={seatsOf(value) === undefined}
    >
      <Label>Seats</Label>
      <Input />
      <Text slot="description">{children}</Text>
    </TextField>
  );
}
