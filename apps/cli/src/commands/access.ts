import type { AccessRule, Host, HostGroup } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { exitNoUnless, present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const ruleColumns: Column<AccessRule>[] = [
  { key: 'id', header: 'ID', value: (r) => r.id },
  { key: 'effect', header: 'EFFECT', value: (r) => r.effect },
  { key: 'subject_kind', header: 'SUBJECT', value: (r) => r.subject_kind },
  { key: 'subject_id', header: 'SUBJECT ID', value: (r) => r.subject_id },
  { key: 'target_kind', header: 'TARGET', value: (r) => r.target_kind },
  { key: 'target_id', header: 'TARGET ID', value: (r) => r.target_id },
  { key: 'created_at', header: 'CREATED', value: (r) => r.created_at },
];
const hostColumns: Column<Host>[] = [
  { key: 'id', header: 'ID', value: (h) => h.id },
  { key: 'name', header: 'NAME', value: (h) => h.name },
  { key: 'host_group_id', header: 'GROUP', value: (h) => h.host_group_id },
  { key: 'created_at', header: 'CREATED', value: (h) => h.created_at },
];
const groupColumns: Column<HostGroup>[] = [
  { key: 'id', header: 'ID', value: (g) => g.id },
  { key: 'name', header: 'NAME', value: (g) => g.name },
  { key: 'created_at', header: 'CREATED', value: (g) => g.created_at },
];

/** Exactly one of the flags: `--user` or `--org`, `--host` or `--group`. */
function oneOf<K extends string>(options: Record<string, string | undefined>, kinds: Record<string, K>, what: string) {
  const given = Object.entries(kinds).filter(([flag]) => options[flag] !== undefined);
  if (given.length !== 1) {
    throw new UsageError(
      `name exactly one ${what}: ${Object.keys(kinds)
        .map((f) => `--${f}`)
        .join(' or ')}`,
    );
  }
  const [flag, kind] = given[0]!;
  return { kind, id: options[flag]! };
}

export function registerAccess(program: Command): void {
  const access = program.command('access').description('Host access rules: who may sign in to which of your hosts');

  const rules = access.command('rules').description('Manage access rules (without a subcommand: list them)');
  rules
    .command('list', { isDefault: true })
    .description('List access rules, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing access rules',
        () => gatehouse.access.rules.list(),
        (rows) => tableView(ruleColumns, rows, 'No access rules.'),
      );
    });
  rules
    .command('create')
    .description('Allow or deny a user, or every member of an organization, on a host or a host group')
    .argument('<effect>', 'allow or deny')
    .option('--user <id>', 'the subject: a user')
    .option('--org <id>', 'the subject: every member of an organization')
    .option('--host <id>', 'the target: a host')
    .option('--group <id>', 'the target: every host of a host group')
    .action(async (effect: string, options: Record<string, string | undefined>, command: Command) => {
      if (effect !== 'allow' && effect !== 'deny') throw new UsageError('the effect is allow or deny');
      const subject = oneOf(options, { user: 'user', org: 'organization' } as const, 'subject');
      const target = oneOf(options, { host: 'host', group: 'host_group' } as const, 'target');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the access rule',
        () =>
          gatehouse.access.rules.create({
            effect,
            subject_kind: subject.kind,
            subject_id: subject.id,
            target_kind: target.kind,
            target_id: target.id,
          }),
        (rule) => recordView(rule),
      );
    });
  rules
    .command('delete')
    .description('Delete an access rule (it stops applying at once)')
    .argument('<id>', 'access rule id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the access rule',
        () => gatehouse.access.rules.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted access rule ${deleted.id}` }),
      );
    });

  access
    .command('check')
    .description(
      'May this user sign in to this host? (a matching deny wins; no matching allow is deny): exit 0 when allowed, exit 3 when denied',
    )
    .argument('<user_id>', 'user id')
    .argument('<host_id>', 'host id')
    .action(async (userId: string, hostId: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const decision = await present(
        command,
        'Checking access',
        () => gatehouse.access.check({ user_id: userId, host_id: hostId }),
        (answer) => recordView(answer),
      );
      exitNoUnless(decision.allowed);
    });

  const hosts = access.command('hosts').description('Manage hosts (without a subcommand: list them)');
  hosts
    .command('list', { isDefault: true })
    .description('List hosts, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing hosts',
        () => gatehouse.access.hosts.list(),
        (rows) => tableView(hostColumns, rows, 'No hosts.'),
      );
    });
  hosts
    .command('create')
    .description('Register a host (the service assigns its id)')
    .argument('<name>', 'host name')
    .option('--group <id>', 'the host group it belongs to')
    .action(async (name: string, options: { group?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Registering the host',
        () => gatehouse.access.hosts.create({ name, ...(options.group !== undefined ? { host_group_id: options.group } : {}) }),
        (host) => recordView(host),
      );
    });
  hosts
    .command('delete')
    .description('Delete a host and the rules that target it')
    .argument('<id>', 'host id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the host',
        () => gatehouse.access.hosts.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted host ${deleted.id}` }),
      );
    });

  const groups = access.command('groups').description('Manage host groups (without a subcommand: list them)');
  groups
    .command('list', { isDefault: true })
    .description('List host groups, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing host groups',
        () => gatehouse.access.hostGroups.list(),
        (rows) => tableView(groupColumns, rows, 'No host groups.'),
      );
    });
  groups
    .command('create')
    .description('Create a host group')
    .argument('<name>', 'group name')
    .action(async (name: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the host group',
        () => gatehouse.access.hostGroups.create({ name }),
        (g) => recordView(g),
      );
    });
  groups
    .command('delete')
    .description('Delete a host group and the rules that target it (its hosts stay, in no group)')
    .argument('<id>', 'host group id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the host group',
        () => gatehouse.access.hostGroups.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted host group ${deleted.id}` }),
      );
    });
}
