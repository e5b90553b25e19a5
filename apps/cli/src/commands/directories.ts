import type { Directory } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const PROVIDERS = ['okta', 'entra', 'google', 'generic'] as const;
type Provider = (typeof PROVIDERS)[number];

const columns: Column<Directory>[] = [
  { key: 'id', header: 'ID', value: (d) => d.id },
  { key: 'name', header: 'NAME', value: (d) => d.name },
  { key: 'provider', header: 'PROVIDER', value: (d) => d.provider },
  { key: 'status', header: 'STATUS', value: (d) => d.status },
  { key: 'user_count', header: 'USERS', value: (d) => d.user_count },
  { key: 'group_count', header: 'GROUPS', value: (d) => d.group_count },
  { key: 'last_request_at', header: 'LAST REQUEST', value: (d) => d.last_request_at ?? '' },
];

/** `--map Admins=admin --map Engineering=engineer` as group_role_mappings, in the order given. */
function mappings(values: string[] | undefined) {
  return values?.map((value) => {
    const at = value.lastIndexOf('=');
    if (at < 1 || at === value.length - 1) throw new UsageError(`--map takes <group>=<role>, not ${value}`);
    return { group: value.slice(0, at), role: value.slice(at + 1) };
  });
}

function provider(value: string): Provider {
  if (!(PROVIDERS as readonly string[]).includes(value)) throw new UsageError(`the provider is one of ${PROVIDERS.join(', ')}`);
  // checked just above against the list
  return value as Provider;
}

const TOKEN_NOTE =
  "The SCIM token is shown only now (and on rotate-token): paste it into the identity provider's provisioning settings.";

/** `gatehouse orgs directories …`: an organization's SCIM directories (CONTRACT §8). */
export function registerDirectories(orgs: Command): void {
  const directories = orgs.command('directories').description("Manage an organization's SCIM directories (Okta, Entra, Google)");

  directories
    .command('create')
    .description('Create a SCIM directory: answers its base URL and its token, shown this once')
    .argument('<org>', 'organization id')
    .requiredOption('--name <name>', 'a name for the directory')
    .option('--provider <provider>', `${PROVIDERS.join(', ')}`, 'generic')
    .option('--map <group=role...>', 'give the members of a group a role, e.g. --map Admins=admin (first match wins)')
    .action(async (org: string, options: { name: string; provider: string; map?: string[] }, command: Command) => {
      const groupRoleMappings = mappings(options.map);
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the directory',
        () =>
          gatehouse.organizations.directories.create({
            id: org,
            name: options.name,
            provider: provider(options.provider),
            ...(groupRoleMappings ? { group_role_mappings: groupRoleMappings } : {}),
          }),
        (directory) => recordView(directory, TOKEN_NOTE),
      );
    });

  directories
    .command('list')
    .description("List an organization's directories, newest first")
    .argument('<org>', 'organization id')
    .action(async (org: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing directories',
        () => gatehouse.organizations.directories.list({ id: org }),
        (list) => tableView(columns, list, 'No directories.'),
      );
    });

  directories
    .command('show')
    .description('Show a directory')
    .argument('<org>', 'organization id')
    .argument('<directory>', 'directory id')
    .action(async (org: string, directory: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Reading the directory',
        () => gatehouse.organizations.directories.get({ id: org, directory_id: directory }),
        (record) => recordView(record),
      );
    });

  directories
    .command('update')
    .description('Rename, disable or enable a directory, or set its group role mappings')
    .argument('<org>', 'organization id')
    .argument('<directory>', 'directory id')
    .option('--name <name>', 'new name')
    .option('--status <status>', 'active, or disabled (every SCIM request is then refused)')
    .option('--map <group=role...>', 'the group role mappings, replacing the current ones (first match wins)')
    .option('--no-mappings', 'remove every group role mapping')
    .action(
      async (
        org: string,
        directory: string,
        options: { name?: string; status?: string; map?: string[]; mappings?: boolean },
        command: Command,
      ) => {
        if (options.status !== undefined && options.status !== 'active' && options.status !== 'disabled') {
          throw new UsageError('the status is active or disabled');
        }
        if (options.map && options.mappings === false) throw new UsageError('give --map or --no-mappings, not both');
        const groupRoleMappings = options.mappings === false ? [] : mappings(options.map);
        if (options.name === undefined && options.status === undefined && groupRoleMappings === undefined) {
          throw new UsageError('nothing to change: pass --name, --status, --map or --no-mappings');
        }
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Updating the directory',
          () =>
            gatehouse.organizations.directories.update({
              id: org,
              directory_id: directory,
              ...(options.name !== undefined ? { name: options.name } : {}),
              // checked above: active or disabled
              ...(options.status !== undefined ? { status: options.status as 'active' | 'disabled' } : {}),
              ...(groupRoleMappings !== undefined ? { group_role_mappings: groupRoleMappings } : {}),
            }),
          (record) => recordView(record),
        );
      },
    );

  directories
    .command('rotate-token')
    .description('Issue a new SCIM token; the old one stops working at once')
    .argument('<org>', 'organization id')
    .argument('<directory>', 'directory id')
    .action(async (org: string, directory: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Rotating the token',
        () => gatehouse.organizations.directories.rotateToken({ id: org, directory_id: directory }),
        (record) => recordView(record, TOKEN_NOTE),
      );
    });

  directories
    .command('remove')
    .description('Delete a directory with its users and groups (the memberships it made stay); there is no undo')
    .argument('<org>', 'organization id')
    .argument('<directory>', 'directory id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (org: string, directory: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing a directory stops its provisioning');
      if (ask && !(await confirm(`Delete directory ${directory} of organization ${org}? There is no undo.`))) {
        throw new Error('cancelled: nothing was deleted');
      }
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the directory',
        () => gatehouse.organizations.directories.delete({ id: org, directory_id: directory }),
        (deleted) => ({ kind: 'message', text: `Deleted directory ${deleted.id}` }),
      );
    });
}
