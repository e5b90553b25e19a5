import type { GatehouseClient, User, UserFactor } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { pageInput, pageOptions, parseJsonObject } from '../args.ts';
import { ask, confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { outputMode, present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

const columns: Column<User>[] = [
  { key: 'id', header: 'ID', value: (u) => u.id },
  { key: 'primary_email', header: 'EMAIL', value: (u) => u.primary_email },
  { key: 'email_verified', header: 'VERIFIED', value: (u) => u.email_verified },
  { key: 'status', header: 'STATUS', value: (u) => u.status },
  { key: 'created_at', header: 'CREATED', value: (u) => u.created_at },
];

const factorColumns: Column<UserFactor>[] = [
  { key: 'id', header: 'ID', value: (f) => f.id },
  { key: 'kind', header: 'KIND', value: (f) => f.kind },
  { key: 'name', header: 'NAME', value: (f) => f.name },
  { key: 'created_at', header: 'CREATED', value: (f) => f.created_at },
  { key: 'last_used_at', header: 'LAST USED', value: (f) => f.last_used_at },
];

const organizationColumns: Column<{ id: string; name: string; role: string }>[] = [
  { key: 'id', header: 'ID', value: (o) => o.id },
  { key: 'name', header: 'NAME', value: (o) => o.name },
  { key: 'role', header: 'ROLE', value: (o) => o.role },
];

const KIND_LABELS: Record<UserFactor['kind'], string> = {
  passkey: 'passkey',
  totp: 'authenticator app (TOTP)',
  backup_code: 'backup code set',
};

/** The factor about to be removed, to name it in the question and the result line; undefined when the user has none. */
async function findFactor(gatehouse: GatehouseClient, user: string, factorId: string): Promise<UserFactor | undefined> {
  return (await gatehouse.users.factors.list({ id: user })).find((f) => f.id === factorId);
}

const describeFactor = (factorId: string, factor: UserFactor | undefined): string =>
  factor ? `${KIND_LABELS[factor.kind]} "${factor.name}" (${factor.id})` : `factor ${factorId}`;

export function registerUsers(program: Command): void {
  const users = program.command('users').description("Manage the application's users");

  users
    .command('create')
    .description('Create a user')
    .option('--email <email>', 'primary email address (unique in the application); asked for on a terminal when absent')
    .option('--no-email', 'create a user without an email address')
    .option('--verified', 'mark the email address as verified')
    .option('--profile <json>', 'profile, a JSON object', parseJsonObject)
    .action(
      async (options: { email?: string | false; verified?: boolean; profile?: Record<string, unknown> }, command: Command) => {
        // A user without an address is allowed, but rarely meant: on a terminal ask; a script says --no-email.
        if (options.email === undefined) {
          if (!process.stdin.isTTY)
            throw new UsageError('users create needs --email <address>, or --no-email for a user without one');
          options.email = (await ask('Email address (empty for none): ')) || false;
        }
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Creating the user',
          () =>
            gatehouse.users.create({
              ...(options.email ? { primary_email: options.email } : {}),
              ...(options.verified ? { email_verified: true } : {}),
              ...(options.profile ? { profile: options.profile } : {}),
            }),
          (user) => recordView(user),
        );
      },
    );

  pageOptions(
    users
      .command('list')
      .description('List users, newest first')
      .option('--search <text>', 'only users whose email contains this text'),
  ).action(async (options: { search?: string; limit?: number; offset?: number }, command: Command) => {
    const gatehouse = await secretKeyClient(command);
    await present(
      command,
      'Listing users',
      () => gatehouse.users.list({ ...(options.search !== undefined ? { search: options.search } : {}), ...pageInput(options) }),
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
    .command('update')
    .description("Change a user's profile or whether their email address is verified")
    .argument('<id>', 'user id')
    .option('--profile <json>', 'the new profile, a JSON object (replaces the old one)', parseJsonObject)
    .option('--verified', 'mark the email address as verified')
    .option('--unverified', 'mark the email address as not verified')
    .action(
      async (
        id: string,
        options: { profile?: Record<string, unknown>; verified?: boolean; unverified?: boolean },
        command: Command,
      ) => {
        if (options.verified && options.unverified) throw new UsageError('--verified and --unverified exclude each other');
        if (!options.profile && !options.verified && !options.unverified) {
          throw new UsageError(
            'nothing to change: pass --profile, --verified or --unverified (ban and unban have their own commands)',
          );
        }
        const gatehouse = await secretKeyClient(command);
        await present(
          command,
          'Updating the user',
          () =>
            gatehouse.users.update({
              id,
              ...(options.profile ? { profile: options.profile } : {}),
              ...(options.verified || options.unverified ? { email_verified: Boolean(options.verified) } : {}),
            }),
          (user) => recordView(user),
        );
      },
    );

  users
    .command('ban')
    .description('Ban a user: every session ends at once and sign-in is refused until unbanned')
    .argument('<id>', 'user id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const askFirst = mustConfirm(options.yes, 'banning a user signs them out everywhere');
      if (askFirst && !(await confirm(`Ban user ${id}? Every session ends at once.`)))
        throw new Error('cancelled: nothing was changed');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Banning the user',
        () => gatehouse.users.update({ id, status: 'banned' }),
        (user) => recordView(user),
      );
    });

  users
    .command('unban')
    .description('Let a banned user sign in again')
    .argument('<id>', 'user id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Unbanning the user',
        () => gatehouse.users.update({ id, status: 'active' }),
        (user) => recordView(user),
      );
    });

  users
    .command('delete')
    .description('Delete a user with their sessions, memberships and factors; there is no undo')
    .argument('<id>', 'user id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const askFirst = mustConfirm(options.yes, 'deleting a user deletes their data');
      if (askFirst && !(await confirm(`Delete user ${id} with their sessions and memberships? There is no undo.`))) {
        throw new Error('cancelled: nothing was deleted');
      }
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Deleting the user',
        () => gatehouse.users.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted user ${deleted.id}` }),
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

  const grants = users
    .command('grants')
    .description('List the third-party apps a user authorized (OAuth grants), newest first (`users grants revoke` revokes one)')
    .argument('<user>', 'user id')
    .action(async (user: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        "Fetching the user's grants",
        () => gatehouse.users.grants.list({ id: user }),
        (list) =>
          tableView(
            [
              { key: 'id', header: 'GRANT ID', value: (g) => g.id },
              { key: 'client_id', header: 'CLIENT ID', value: (g) => g.client_id },
              { key: 'scopes', header: 'SCOPES', value: (g) => g.scopes },
              { key: 'created_at', header: 'CREATED', value: (g) => g.created_at },
              { key: 'updated_at', header: 'UPDATED', value: (g) => g.updated_at },
            ],
            list,
            'No grants.',
          ),
      );
    });

  grants
    .command('revoke')
    .description('Revoke a grant: the app loses every token issued under it at once')
    .argument('<user>', 'user id')
    .argument('<grant-id>', 'grant id, from `gatehouse users grants <user>`')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (user: string, grantId: string, options: { yes?: boolean }, command: Command) => {
      if (mustConfirm(options.yes, 'revoking a grant signs the app out of the user’s account')) {
        if (!(await confirm(`Revoke grant ${grantId} of user ${user}? The app's tokens stop working at once.`))) {
          throw new Error('cancelled: nothing was revoked');
        }
      }
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Revoking the grant',
        () => gatehouse.users.grants.revoke({ id: user, grant_id: grantId }),
        () => ({ kind: 'message', text: `Revoked grant ${grantId} of user ${user}; its tokens no longer work` }),
      );
    });

  const identities = users
    .command('identities')
    .description("List a user's linked OAuth and SAML accounts, newest first (`users identities remove` unlinks one)")
    .argument('<user>', 'user id')
    .action(async (user: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        "Fetching the user's linked accounts",
        () => gatehouse.users.identities.list({ id: user }),
        (list) =>
          tableView(
            [
              { key: 'id', header: 'ID', value: (i) => i.id },
              { key: 'kind', header: 'KIND', value: (i) => i.kind },
              { key: 'provider', header: 'PROVIDER', value: (i) => i.provider },
              { key: 'name', header: 'NAME', value: (i) => i.name },
              { key: 'created_at', header: 'LINKED', value: (i) => i.created_at },
              { key: 'last_used_at', header: 'LAST USED', value: (i) => i.last_used_at },
            ],
            list,
            'No linked accounts.',
          ),
      );
    });

  identities
    .command('remove')
    .description('Unlink an OAuth or SAML account from a user (never the last way they can sign in)')
    .argument('<user>', 'user id')
    .argument('<identity-id>', 'identity id, from `gatehouse users identities <user>`')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (user: string, identityId: string, options: { yes?: boolean }, command: Command) => {
      if (mustConfirm(options.yes, 'unlinking an account stops the user signing in with it')) {
        if (!(await confirm(`Unlink account ${identityId} from user ${user}? They can no longer sign in with it.`))) {
          throw new Error('cancelled: nothing was unlinked');
        }
      }
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Unlinking the account',
        () => gatehouse.users.identities.remove({ id: user, identity_id: identityId }),
        () => ({ kind: 'message', text: `Unlinked account ${identityId} from user ${user}` }),
      );
    });

  users
    .command('orgs')
    .description('List the organizations a user is a member of, by name, with their role')
    .argument('<user>', 'user id')
    .action(async (user: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        "Fetching the user's organizations",
        () => gatehouse.users.organizations({ id: user }),
        (list) => tableView(organizationColumns, list, 'No organizations.'),
      );
    });

  const factors = users
    .command('factors')
    .description("List a user's passkeys and second factors, newest first (`users factors remove` removes one)")
    .usage('[options] <user>')
    .argument('<user>', 'user id')
    .addHelpText(
      'after',
      '\nKIND is passkey, totp (an authenticator app) or backup_code (a set of backup codes). Secrets are never shown.\n' +
        'To remove one, e.g. for a lost phone or security key: gatehouse users factors remove <user> <factor-id>',
    )
    .action(async (user: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        "Fetching the user's factors",
        () => gatehouse.users.factors.list({ id: user }),
        (list) => tableView(factorColumns, list, 'No passkeys or second factors.'),
      );
    });

  factors
    .command('remove')
    .description('Remove a passkey or second factor (support: a lost device); signs the user out everywhere')
    .argument('<user>', 'user id')
    .argument('<factor-id>', 'factor id, from `gatehouse users factors <user>`')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .addHelpText(
      'after',
      '\nEvery session of the user is revoked at once, as with `gatehouse sessions revoke`, and the user is told by\n' +
        'email when they have an address. There is no undo: the user must sign in again and can then enroll a new\n' +
        'passkey or factor. On a terminal the CLI asks first; scripts (standard input not a terminal) pass --yes.',
    )
    .action(async (user: string, factorId: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing a factor signs the user out everywhere');
      const gatehouse = await secretKeyClient(command);
      // The factor is named in the question and in the result line (--json prints only what the API answered).
      const factor = ask || outputMode(command) !== 'json' ? await findFactor(gatehouse, user, factorId) : undefined;
      // A factor the user does not have is not asked about: removing it fails with not_found.
      if (ask && factor) {
        const question = `Remove ${describeFactor(factorId, factor)} of user ${user}? It signs them out everywhere.`;
        if (!(await confirm(question))) throw new Error('cancelled: nothing was removed');
      }
      await present(
        command,
        'Removing the factor',
        () => gatehouse.users.factors.remove({ id: user, factor_id: factorId }),
        (removed) => ({
          kind: 'message',
          text:
            `Removed ${describeFactor(removed.id, factor)} of user ${user}; revoked ${removed.revoked_sessions} ` +
            `session${removed.revoked_sessions === 1 ? '' : 's'} (signed out everywhere)`,
        }),
      );
    });
}
