import type { Operator } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { pageInput, pageOptions } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { operatorClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

const ROLES = ['owner', 'admin', 'support', 'viewer'] as const;
type Role = (typeof ROLES)[number];

const parseRole = (value: string): Role => {
  const role = ROLES.find((r) => r === value);
  if (!role) throw new InvalidArgumentError(`one of ${ROLES.join(', ')}`);
  return role;
};

const rolesText = (operator: Operator) =>
  operator.roles.map((r) => `${r.role}@${r.application_id ?? 'all'}`).join(', ') || '(none)';

const columns: Column<Operator>[] = [
  { key: 'id', header: 'ID', value: (o) => o.id },
  { key: 'email', header: 'EMAIL', value: (o) => o.email },
  { key: 'roles', header: 'ROLES', value: rolesText },
  { key: 'created_at', header: 'CREATED', value: (o) => o.created_at },
];

/**
 * `gatehouse operators …`: the people who sign in to the console and their roles (operator token). `add` answers a
 * one-time sign-in link: the way in for the first operator.
 */
export function registerOperators(program: Command): void {
  const operators = program
    .command('operators')
    .description(
      'The people who sign in to the console, with a role per application (operator token: GATEHOUSE_OPERATOR_TOKEN or <data dir>/operator-token)',
    );

  operators
    .command('add')
    .description('Add an operator (or give one a role) and print a one-time sign-in link to the console')
    .argument('<email>', 'the operator\u2019s email address')
    .option('--role <role>', `${ROLES.join(', ')} (default owner)`, parseRole)
    .option('--application <id>', 'the application the role is for (default: every application)')
    .action(async (email: string, options: { role?: Role; application?: string }, command: Command) => {
      const gatehouse = await operatorClient(command);
      await present(
        command,
        'Adding the operator',
        () => gatehouse.operators.add({ email, role: options.role ?? 'owner', application_id: options.application ?? null }),
        ({ operator, sign_in_link }) =>
          recordView(
            {
              id: operator.id,
              email: operator.email,
              roles: rolesText(operator),
              sign_in_link: sign_in_link.url,
              expires_at: sign_in_link.expires_at,
            },
            'Send the sign-in link to the operator: it opens the console once, before it expires.',
          ),
      );
    });

  pageOptions(operators.command('list').description('List operators and their roles, newest first')).action(
    async (options: { limit?: number; offset?: number }, command: Command) => {
      const gatehouse = await operatorClient(command);
      await present(
        command,
        'Listing operators',
        () => gatehouse.operators.list(pageInput(options)),
        (page) => tableView(columns, page.operators, 'No operators.', pageSummary(page, page.operators.length)),
      );
    },
  );

  operators
    .command('set-role')
    .description('Set an operator\u2019s role for an application (or every application); --none removes it')
    .argument('<id>', 'operator id')
    .option('--role <role>', ROLES.join(', '), parseRole)
    .option('--none', 'remove the operator\u2019s role there')
    .option('--application <id>', 'the application (default: every application)')
    .action(async (id: string, options: { role?: Role; none?: boolean; application?: string }, command: Command) => {
      if (!options.role === !options.none) throw new UsageError('pass either --role <role> or --none');
      const gatehouse = await operatorClient(command);
      await present(
        command,
        'Setting the role',
        () => gatehouse.operators.setRole({ id, role: options.role ?? null, application_id: options.application ?? null }),
        (operator) => recordView({ id: operator.id, email: operator.email, roles: rolesText(operator) }),
      );
    });

  operators
    .command('remove')
    .description('Remove an operator: their roles go and their console sessions are revoked at once')
    .argument('<id>', 'operator id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing an operator signs them out of the console');
      if (ask && !(await confirm(`Remove operator ${id}? They are signed out of the console at once.`))) {
        throw new Error('cancelled: nothing was removed');
      }
      const gatehouse = await operatorClient(command);
      await present(
        command,
        'Removing the operator',
        () => gatehouse.operators.remove({ id }),
        (deleted) => ({ kind: 'message', text: `Removed operator ${deleted.id}` }),
      );
    });
}
