import type { OAuthProviderSetting } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { parseBoolean } from '../args.ts';
import { applicationClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

type Provider = OAuthProviderSetting['provider'];

/** Whose OAuth client signs people in: the application's own, the operator's shared one (development), or none. */
const credentials = (p: OAuthProviderSetting) =>
  p.use_shared_dev_credentials ? 'shared (development)' : p.client_id ? `own: ${p.client_id}` : 'none';

const columns: Column<OAuthProviderSetting>[] = [
  { key: 'provider', header: 'PROVIDER', value: (p) => p.provider },
  { key: 'enabled', header: 'ENABLED', value: (p) => (p.enabled ? 'yes' : 'no') },
  { key: 'credentials', header: 'CREDENTIALS', value: credentials },
  { key: 'has_secret', header: 'SECRET', value: (p) => (p.has_secret ? 'stored' : '') },
  { key: 'scopes', header: 'SCOPES', value: (p) => p.scopes.join(' ') },
];

const show = (p: OAuthProviderSetting) =>
  recordView(
    { ...p, credentials: credentials(p) },
    p.enabled ? undefined : `Enable it: gatehouse providers enable ${p.provider}`,
  );

interface SetOptions {
  clientId?: string;
  clientSecret?: string;
  scopes?: string;
  shared?: boolean;
  issuer?: string;
  enabled?: boolean;
}

/** The current setting of one provider (to keep `enabled` as it is when `set` does not say). */
async function current(command: Command, provider: string) {
  const { gatehouse, applicationId } = await applicationClient(command);
  const list = await gatehouse.providers.list({ id: applicationId });
  return { gatehouse, applicationId, setting: list.find((p) => p.provider === provider) };
}

export function registerProviders(program: Command): void {
  const providers = program
    .command('providers')
    .description('Social sign-in providers of the application (Google, GitHub, …, and any OpenID Connect issuer)');

  providers
    .command('list')
    .description('Every provider with its setting, and whose credentials it uses')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Listing OAuth providers',
        () => gatehouse.providers.list({ id: applicationId }),
        (rows) => tableView(columns, rows, 'No providers.'),
      );
    });

  providers
    .command('set')
    .description('Configure a provider (register {base URL}/v1/auth/oauth/redirect as the redirect URI of your OAuth client)')
    .argument('<provider>', 'google, github, microsoft, apple, gitlab, discord, slack, linkedin or oidc')
    .option('--client-id <id>', 'your OAuth client id')
    .option('--client-secret <secret>', 'your OAuth client secret (stored encrypted, never shown again)')
    .option('--scopes <scopes>', 'space- or comma-separated scopes (default: the provider’s sign-in scopes)')
    .option('--shared <true|false>', "use the operator's shared development credentials (development apps only)", parseBoolean)
    .option('--issuer <url>', 'oidc only: the issuer URL (https)')
    .option('--enabled <true|false>', 'switch it on or off (default: unchanged)', parseBoolean)
    .action(async (provider: string, options: SetOptions, command: Command) => {
      const { gatehouse, applicationId, setting } = await current(command, provider);
      const input = {
        id: applicationId,
        provider: provider as Provider,
        enabled: options.enabled ?? setting?.enabled ?? false,
        ...(options.clientId !== undefined ? { client_id: options.clientId } : {}),
        ...(options.clientSecret !== undefined ? { client_secret: options.clientSecret } : {}),
        ...(options.scopes !== undefined ? { scopes: options.scopes.split(/[\s,]+/).filter(Boolean) } : {}),
        ...(options.shared !== undefined ? { use_shared_dev_credentials: options.shared } : {}),
        ...(options.issuer !== undefined ? { issuer: options.issuer } : {}),
      };
      await present(command, `Configuring ${provider}`, () => gatehouse.providers.put(input), show);
    });

  for (const [name, enabled] of [
    ['enable', true],
    ['disable', false],
  ] as const) {
    providers
      .command(name)
      .description(enabled ? 'Switch a configured provider on' : 'Switch a provider off (its settings stay)')
      .argument('<provider>', 'provider name')
      .action(async (provider: string, _options, command: Command) => {
        const { gatehouse, applicationId } = await applicationClient(command);
        await present(
          command,
          `${enabled ? 'Enabling' : 'Disabling'} ${provider}`,
          () => gatehouse.providers.put({ id: applicationId, provider: provider as Provider, enabled }),
          show,
        );
      });
  }

  providers
    .command('reset')
    .description('Forget a provider’s setting (disabled, client id and secret removed)')
    .argument('<provider>', 'provider name')
    .action(async (provider: string, _options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        `Resetting ${provider}`,
        () => gatehouse.providers.reset({ id: applicationId, provider: provider as Provider }),
        (reset) => ({ kind: 'message', text: `Provider ${reset.id} is reset (disabled, no credentials)` }),
      );
    });
}
