import type { GatehouseClient } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { applicationClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

type Day = Awaited<ReturnType<GatehouseClient['stats']['daily']>>['days'][number];

const dailyColumns: Column<Day>[] = [
  { key: 'date', header: 'DAY', value: (d) => d.date },
  { key: 'sign_ins', header: 'SIGN-INS', value: (d) => d.sign_ins.total },
  { key: 'magic_link', header: 'MAGIC LINK', value: (d) => d.sign_ins.magic_link },
  { key: 'passkey', header: 'PASSKEY', value: (d) => d.sign_ins.passkey },
  { key: 'federated', header: 'FEDERATED', value: (d) => d.sign_ins.federated },
  { key: 'other', header: 'OTHER', value: (d) => d.sign_ins.other },
  { key: 'active_users', header: 'ACTIVE', value: (d) => d.active_users },
  { key: 'new_users', header: 'NEW', value: (d) => d.new_users },
  { key: 'failed_sign_ins', header: 'FAILED', value: (d) => d.failed_sign_ins },
  { key: 'webhooks_succeeded', header: 'WEBHOOKS OK', value: (d) => d.webhook_deliveries.succeeded },
  { key: 'webhooks_failed', header: 'WEBHOOKS FAILED', value: (d) => d.webhook_deliveries.failed },
  { key: 'webhooks_pending', header: 'WEBHOOKS PENDING', value: (d) => d.webhook_deliveries.pending },
];

export function registerStats(program: Command): void {
  const stats = program
    .command('stats')
    .description('Usage statistics of the application you are logged in to')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the statistics',
        () => gatehouse.stats.get({ id: applicationId }),
        (stats) => recordView(stats),
      );
    });

  stats
    .command('daily')
    .description('Per-day sign-ins, active and new users, failed sign-ins and webhook deliveries (UTC days)')
    .option('--from <day>', 'first day, YYYY-MM-DD (default: 29 days before --to)')
    .option('--to <day>', 'last day, included, YYYY-MM-DD (default: today, UTC)')
    .addHelpText('after', '\nAt most 366 days. --json prints the whole answer, with the monthly active users.')
    .action(async (options: { from?: string; to?: string }, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the daily statistics',
        () =>
          gatehouse.stats.daily({
            id: applicationId,
            ...(options.from ? { from: options.from } : {}),
            ...(options.to ? { to: options.to } : {}),
          }),
        (result) =>
          tableView(
            dailyColumns,
            result.days,
            'No days',
            `Monthly active users (${result.monthly_active_users.from} to ${result.monthly_active_users.to}): ${result.monthly_active_users.count}`,
          ),
      );
    });
}
