import type { ApiKey } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { splitList } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const columns: Column<ApiKey>[] = [
  { key: 'id', header: 'ID', value: (k) => k.id },
  { key: 'name', header: 'NAME', value: (k) => k.name },
  { key: 'prefix', header: 'PREFIX', value: (k) => k.prefix },
  { key: 'scopes', header: 'SCOPES', value: (k) => k.scopes },
  { key: 'created_at', header: 'CREATED', value: (k) => k.created_at },
  { key: 'last_used_at', header: 'LAST USED', value: (k) => k.last_used_at },
  { key: 'revoked_at', header: 'REVOKED', value: (k) => k.revoked_at },
];

export function registerApiKeys(program: Command): void {
  const apiKeys = program.command('api-keys').description("Manage the application's secret API keys");

  apiKeys
    .command('create')
    .description('Create a secret key (the secret is shown once)')
    .argument('[name]', 'a name to recognise the key by (or --name)')
    .option('--name <name>', 'a name to recognise the key by')
    .option('--scope <scope...>', 'scopes, e.g. users:read organizations:write (or * for all)')
    .option('--scopes <scopes...>', 'the same as --scope, e.g. --scopes saml:write,users:read')
    .action(
      async (
        positional: string | undefined,
        options: { name?: string; scope?: string[]; scopes?: string[] },
        command: Command,
      ) => {
        if (positional !== undefined && options.name !== undefined && positional !== options.name) {
          throw new UsageError('give the name once: as the argument or with --name');
        }
        const name = positional ?? options.name;
        if (name === undefined) throw new UsageError('a name is required: gatehouse api-keys create <name> --scope <scope...>');
        const scopes = splitList([...(options.scope ?? []), ...(options.scopes ?? [])]);
        if (!scopes.length) throw new UsageError('at least one scope is required: --scope users:read (or --scopes)');
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Creating the API key',
          () => gatehouse.apiKeys.create({ name, scopes }),
          (key) => recordView(key, 'The secret is shown only once: store it now.'),
        );
      },
    );

  apiKeys
    .command('list')
    .description('List secret keys (revoked ones included)')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing API keys',
        () => gatehouse.apiKeys.list(),
        (keys) => tableView(columns, keys, 'No API keys.'),
      );
    });

  apiKeys
    .command('revoke')
    .description('Revoke a secret key (effective immediately)')
    .argument('<id>', 'API key id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Revoking the API key',
        () => gatehouse.apiKeys.revoke({ id }),
        (revoked) => ({ kind: 'message', text: `Revoked API key ${revoked.id}` }),
      );
    });
}
