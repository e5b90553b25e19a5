import type { Plan, Subscription } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { parseInteger } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const planColumns: Column<Plan>[] = [
  { key: 'id', header: 'ID', value: (p) => p.id },
  { key: 'key', header: 'KEY', value: (p) => p.key },
  { key: 'name', header: 'NAME', value: (p) => p.name },
  { key: 'interval', header: 'INTERVAL', value: (p) => p.interval },
  { key: 'currency', header: 'CURRENCY', value: (p) => p.currency },
  { key: 'price_cents', header: 'PRICE', value: (p) => p.price_cents },
  { key: 'per_seat_cents', header: 'PER SEAT', value: (p) => p.per_seat_cents },
  { key: 'trial_days', header: 'TRIAL DAYS', value: (p) => p.trial_days },
  { key: 'archived_at', header: 'ARCHIVED', value: (p) => p.archived_at },
];

const subscriptionColumns: Column<Subscription>[] = [
  { key: 'id', header: 'ID', value: (s) => s.id },
  { key: 'organization_name', header: 'ORGANIZATION', value: (s) => s.organization_name },
  { key: 'plan_key', header: 'PLAN', value: (s) => s.plan_key },
  { key: 'status', header: 'STATUS', value: (s) => s.status },
  { key: 'seats', header: 'SEATS', value: (s) => s.seats },
  { key: 'current_period_end', header: 'PERIOD END', value: (s) => s.current_period_end },
  { key: 'canceled_at', header: 'CANCELED', value: (s) => s.canceled_at },
];

const parseInterval = (value: string) => {
  if (value !== 'month' && value !== 'year') throw new InvalidArgumentError('expected month or year.');
  return value;
};
const parseStatus = (value: string) => {
  if (value !== 'active' && value !== 'past_due') throw new InvalidArgumentError('expected active or past_due.');
  return value;
};
const defined = <T extends Record<string, unknown>>(values: T) =>
  Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;

export function registerBilling(program: Command): void {
  const billing = program.command('billing').description('Plans and the subscriptions (with seats) of organizations');

  const plans = billing.command('plans').description('Manage plans (without a subcommand: list them)');
  plans
    .command('list', { isDefault: true })
    .description('List plans, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing plans',
        () => gatehouse.billing.plans.list(),
        (rows) => tableView(planColumns, rows, 'No plans.'),
      );
    });
  plans
    .command('create')
    .description('Create a plan (prices in cents)')
    .argument('<key>', 'unique key, e.g. team')
    .requiredOption('--name <name>', 'display name')
    .requiredOption('--price <cents>', 'price per interval, in cents', parseInteger)
    .option('--interval <interval>', 'month or year', parseInterval, 'month')
    .option('--currency <code>', 'ISO 4217 code', 'USD')
    .option('--per-seat <cents>', 'price per seat per interval, in cents', parseInteger)
    .option('--trial-days <days>', 'days of trial before the first period', parseInteger)
    .action(
      async (
        key: string,
        options: {
          name: string;
          price: number;
          interval: 'month' | 'year';
          currency: string;
          perSeat?: number;
          trialDays?: number;
        },
        command: Command,
      ) => {
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Creating the plan',
          () =>
            gatehouse.billing.plans.create({
              key,
              name: options.name,
              interval: options.interval,
              currency: options.currency,
              price_cents: options.price,
              ...defined({ per_seat_cents: options.perSeat, trial_days: options.trialDays }),
            }),
          (plan) => recordView(plan),
        );
      },
    );
  plans
    .command('show')
    .description('Show a plan')
    .argument('<id>', 'plan id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Reading the plan',
        () => gatehouse.billing.plans.get({ id }),
        (plan) => recordView(plan),
      );
    });
  plans
    .command('update')
    .description('Change a plan, or archive it (it keeps its subscriptions and takes no new ones)')
    .argument('<id>', 'plan id')
    .option('--name <name>', 'display name')
    .option('--price <cents>', 'price per interval, in cents', parseInteger)
    .option('--per-seat <cents>', 'price per seat, in cents', parseInteger)
    .option('--trial-days <days>', 'days of trial', parseInteger)
    .option('--archive', 'retire the plan')
    .option('--unarchive', 'offer the plan again')
    .action(
      async (
        id: string,
        options: { name?: string; price?: number; perSeat?: number; trialDays?: number; archive?: boolean; unarchive?: boolean },
        command: Command,
      ) => {
        const gatehouse = await secretKeyClient(command);
        const archived = options.archive ? true : options.unarchive ? false : undefined;
        await present(
          command,
          'Updating the plan',
          () =>
            gatehouse.billing.plans.update({
              id,
              ...defined({
                name: options.name,
                price_cents: options.price,
                per_seat_cents: options.perSeat,
                trial_days: options.trialDays,
                archived,
              }),
            }),
          (plan) => recordView(plan),
        );
      },
    );
  plans
    .command('delete')
    .description('Delete a plan nobody subscribed to (archive one with subscriptions instead)')
    .argument('<id>', 'plan id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the plan',
        () => gatehouse.billing.plans.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted plan ${deleted.id}` }),
      );
    });

  const subscriptions = billing
    .command('subscriptions')
    .description('Manage organization subscriptions (without a subcommand: list them)');
  subscriptions
    .command('list', { isDefault: true })
    .description('List every organization subscription, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing subscriptions',
        () => gatehouse.billing.subscriptions.list(),
        (rows) => tableView(subscriptionColumns, rows, 'No subscriptions.'),
      );
    });
  subscriptions
    .command('create')
    .description('Subscribe an organization to a plan (trialing when the plan has a trial)')
    .requiredOption('--org <id>', 'organization id')
    .requiredOption('--plan <id>', 'plan id')
    .requiredOption('--seats <n>', 'how many members the organization may have', parseInteger)
    .action(async (options: { org: string; plan: string; seats: number }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the subscription',
        () =>
          gatehouse.billing.subscriptions.create({ organization_id: options.org, plan_id: options.plan, seats: options.seats }),
        (subscription) => recordView(subscription),
      );
    });
  subscriptions
    .command('show')
    .description('Show a subscription')
    .argument('<id>', 'subscription id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Reading the subscription',
        () => gatehouse.billing.subscriptions.get({ id }),
        (subscription) => recordView(subscription),
      );
    });
  subscriptions
    .command('update')
    .description('Change seats, plan, or status (as your payment provider reports it)')
    .argument('<id>', 'subscription id')
    .option('--seats <n>', 'seats (never fewer than the members)', parseInteger)
    .option('--plan <id>', 'another plan')
    .option('--status <status>', 'active or past_due', parseStatus)
    .action(async (id: string, options: { seats?: number; plan?: string; status?: 'active' | 'past_due' }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Updating the subscription',
        () =>
          gatehouse.billing.subscriptions.update({
            id,
            ...defined({ seats: options.seats, plan_id: options.plan, status: options.status }),
          }),
        (subscription) => recordView(subscription),
      );
    });
  subscriptions
    .command('cancel')
    .description('Cancel a subscription now, or at the end of its period')
    .argument('<id>', 'subscription id')
    .option('--at-period-end', 'keep it until current_period_end')
    .action(async (id: string, options: { atPeriodEnd?: boolean }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Canceling the subscription',
        () => gatehouse.billing.subscriptions.cancel({ id, at_period_end: options.atPeriodEnd ?? false }),
        (subscription) => recordView(subscription),
      );
    });
}
