import { housekeepingTasks } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { memberAddChecks, subscriptionSummarySources } from '../organizations/organizations.hooks.ts';
import { billingRouter } from './billing.router.ts';
import { SubscriptionSchema } from './billing.schema.ts';
import {
  advanceSubscriptionPeriods,
  billingSubscriptionSummary,
  checkSeats,
  NO_LIVE_SUBSCRIPTION_SQL,
} from './billing.service.ts';
import { PlanEntity } from './plan.entity.ts';
import { SubscriptionEntity } from './subscription.entity.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'subscription.created': SubscriptionSchema,
  'subscription.updated': SubscriptionSchema,
  'subscription.canceled': SubscriptionSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Plans and subscriptions: seats checked when a member is added, periods moved on by housekeeping. */
export const billingModule = defineModule({
  name: 'billing',
  entities: [PlanEntity, SubscriptionEntity],
  procedures: { billing: billingRouter },
  tag: {
    name: 'Billing',
    description: 'Plans and the subscriptions of organizations, with seats enforced in the transaction that adds a member.',
  },
  hooks: [
    housekeepingTasks.entry('subscription_periods', advanceSubscriptionPeriods),
    memberAddChecks.entry('seats', { check: checkSeats, clearSql: NO_LIVE_SUBSCRIPTION_SQL }),
    subscriptionSummarySources.entry('billing', billingSubscriptionSummary),
  ],
  events,
});
