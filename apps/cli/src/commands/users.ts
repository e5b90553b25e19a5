import type { User } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { pageInput, parseInteger, parseJsonObject } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

const columns: Column<User>[] = [
  { key: 'id', header: 'ID', value: (u) => u.id },
  { key: 'primary_email', header: 'EMAIL', value: (u) => u.primary_email },
  { key: 'email_verified', header: 'VERIFIED', value: (u) => u.email_verified },
  { key: 'status', header: 'STATUS', value: (u) => u.status },
  { key: 'created_at', header: 'CREATED', value: (u) => u.created_at },
];

export function registerUsers(program: Command): void {
  const users = program.command('users').description("Manage the application's users");

  users
    .command('create')
    .description('Create a user')
    .option('--email <email>', 'primary email address (unique in the application)')
    .option('--verified', 'mark the email address as verified')
    .option('--profile <json>', 'profile, a JSON object', parseJsonObject)
    .action(async (options: { email?: string; verified?: boolean; profile?: Record<string, unknown> }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the user',
        () =>
          gatehouse.users.create({
            ...(options.email !== undefined ? { primary_email: options.email } : {}),
            ...(options.verified ? { email_verified: true } : {}),
            ...(options.profile ? { profile: options.profile } : {}),
          }),
        (user) => recordView(user),
      );
    });

  users
    .command('list')
    .description('List users, newest first')
    .option('--search <text>', 'only users whose email contains this text')
    .option('--limit <n>', 'page size (1-100, default 25)', parseInteger)
    .option('--offset <n>', 'rows to skip', parseInteger)
    .action(async (options: { search?: string; limit?: number; offset?: number }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing users',
        () =>
          gatehouse.users.list({ ...(options.search !== undefined ? { search: options.search } : {}), ...pageInput(options) }),
        (page) => tableView(columns, page.users, 'No users.', pageSummary(page, page.users.length)),
      );
    });

  users
    .command('get')
    .description('Show a user')
    .argument('<id>', 'user id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Fetching the user',
        () => gatehouse.users.get({ id }),
        (user) => recordView(user),
      );
    });

  users
    .command('merge')
    .description("Merge the source user into the target: the target keeps the source's identities and memberships")
    .argument('<source>', 'user id to merge (it becomes status merged)')
    .argument('<target>', 'user id that remains')
    .action(async (source: string, target: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Merging the users',
        () => gatehouse.users.merge({ source_user_id: source, target_user_id: target }),
        (user) => recordView(user),
      );
    });
}
