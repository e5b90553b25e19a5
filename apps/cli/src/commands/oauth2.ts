import type { OAuth2Client } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { splitList } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const columns: Column<OAuth2Client>[] = [
  { key: 'id', header: 'CLIENT ID', value: (c) => c.id },
  { key: 'name', header: 'NAME', value: (c) => c.name },
  { key: 'type', header: 'TYPE', value: (c) => c.type },
  { key: 'redirect_uris', header: 'REDIRECT URIS', value: (c) => c.redirect_uris },
  { key: 'scopes', header: 'SCOPES', value: (c) => c.scopes },
  { key: 'dynamic', header: 'DYNAMIC', value: (c) => (c.dynamic ? 'yes' : 'no') },
  { key: 'created_at', header: 'CREATED', value: (c) => c.created_at },
];

const secretNote = (c: { client_secret: string | null }) =>
  c.client_secret ? 'The client secret is shown this once: store it in the third-party app now.' : undefined;

interface ClientOptions {
  name?: string;
  redirectUri?: string[];
  postLogoutRedirectUri?: string[];
  scope?: string[];
  logoUrl?: string;
}

const clientInput = (o: ClientOptions) => ({
  ...(o.name !== undefined ? { name: o.name } : {}),
  ...(o.redirectUri !== undefined ? { redirect_uris: splitList(o.redirectUri) } : {}),
  ...(o.postLogoutRedirectUri !== undefined ? { post_logout_redirect_uris: splitList(o.postLogoutRedirectUri) } : {}),
  ...(o.scope !== undefined ? { scopes: splitList(o.scope) } : {}),
  ...(o.logoUrl !== undefined ? { logo_url: o.logoUrl === '' ? null : o.logoUrl } : {}),
});

export function registerOAuth2(program: Command): void {
  const oauth2 = program
    .command('oauth2')
    .description('Let other apps sign in with your application (OAuth 2.1 / OpenID Connect)');
  const clients = oauth2.command('clients').description('Manage the third-party apps (OAuth clients) that may ask your users');

  clients
    .command('create')
    .description('Register a client; a confidential one gets a secret, shown once')
    .requiredOption('--name <name>', 'the name users see on the consent page')
    .requiredOption('--redirect-uri <uri...>', 'exact redirect URIs: https, or http://127.0.0.1 for native apps')
    .option('--post-logout-redirect-uri <uri...>', 'where sign-out (RP-initiated logout) may send the browser back, exactly')
    .option('--type <type>', 'public (PKCE only: SPAs, native apps, CLIs, agents) or confidential (a server)', 'confidential')
    .option('--scope <scope...>', 'scopes the client may ask for (default openid)')
    .option('--logo-url <url>', 'a logo for the consent page')
    .action(async (options: ClientOptions & { type: string }, command: Command) => {
      if (options.type !== 'public' && options.type !== 'confidential') throw new UsageError('--type is public or confidential');
      const input = {
        ...clientInput(options),
        name: options.name!,
        redirect_uris: splitList(options.redirectUri),
        type: options.type as 'public' | 'confidential',
      };
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Registering the client',
        () => gatehouse.oauth2.clients.create(input),
        (c) => recordView(c, secretNote(c)),
      );
    });

  clients
    .command('list')
    .description('List clients, newest first')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing clients',
        () => gatehouse.oauth2.clients.list(),
        (rows) => tableView(columns, rows, 'No OAuth clients.'),
      );
    });

  clients
    .command('show')
    .description('Show a client')
    .argument('<id>', 'client id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Fetching the client',
        () => gatehouse.oauth2.clients.get({ id }),
        (c) => recordView(c),
      );
    });

  clients
    .command('update')
    .description("Change a client's name, redirect URIs, scopes or logo")
    .argument('<id>', 'client id')
    .option('--name <name>', 'new name')
    .option('--redirect-uri <uri...>', 'the new list of redirect URIs (replaces the old one)')
    .option('--post-logout-redirect-uri <uri...>', 'the new list of logout redirect URIs (replaces the old one)')
    .option('--scope <scope...>', 'the new list of scopes (replaces the old one)')
    .option('--logo-url <url>', 'a logo URL ("" removes it)')
    .action(async (id: string, options: ClientOptions, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Updating the client',
        () => gatehouse.oauth2.clients.update({ id, ...clientInput(options) }),
        (c) => recordView(c),
      );
    });

  clients
    .command('rotate-secret')
    .description("Replace a confidential client's secret; the old one stops working at once")
    .argument('<id>', 'client id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Rotating the secret',
        () => gatehouse.oauth2.clients.rotateSecret({ id }),
        (c) => recordView(c, secretNote(c)),
      );
    });

  clients
    .command('delete')
    .description('Delete a client: every grant users gave it, and every token it holds, end at once')
    .argument('<id>', 'client id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'deleting a client revokes every grant and token it holds');
      const gatehouse = await secretKeyClient(command);
      if (ask) {
        const { name } = await gatehouse.oauth2.clients.get({ id });
        if (!(await confirm(`Delete OAuth client "${name}" (${id})? There is no undo.`))) {
          throw new Error('cancelled: nothing was deleted');
        }
      }
      await present(
        command,
        'Deleting the client',
        () => gatehouse.oauth2.clients.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted OAuth client ${deleted.id}` }),
      );
    });
}
