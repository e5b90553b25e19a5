import { GatehouseError } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { configPath, readConfig, writeConfig } from '../config.ts';
import { connect, globalOptions, resolveCredentials } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';

export function registerLogin(program: Command): void {
  program
    .command('login')
    .description('Check an application id and secret key against the server, then save them to the config file')
    .addHelpText(
      'after',
      '\nTakes --base-url, --application-id and --secret-key (or GATEHOUSE_BASE_URL, GATEHOUSE_APPLICATION_ID,\n' +
        'GATEHOUSE_SECRET_KEY). The config file is ~/.config/gatehouse/config.json (GATEHOUSE_CONFIG overrides it).',
    )
    .action(async (_options, command: Command) => {
      const credentials = resolveCredentials(globalOptions(command), await readConfig());
      const { baseUrl, applicationId, secretKey } = credentials;
      if (!applicationId || !secretKey) {
        throw new UsageError(
          'login needs --application-id and --secret-key (or GATEHOUSE_APPLICATION_ID and GATEHOUSE_SECRET_KEY)',
        );
      }
      const gatehouse = connect(credentials);
      await present(
        command,
        `Checking the credentials with ${baseUrl}`,
        async () => {
          try {
            await gatehouse.apiKeys.list();
          } catch (error) {
            // A key without `api_keys:read` still authenticated: the server checks the key before the scope.
            if (!(error instanceof GatehouseError && error.code === 'insufficient_scope')) throw error;
          }
          const path = await writeConfig(
            { base_url: baseUrl, application_id: applicationId, secret_key: secretKey },
            configPath(),
          );
          return { base_url: baseUrl, application_id: applicationId, key_prefix: secretKey.slice(0, 12), config_path: path };
        },
        (saved) => ({
          kind: 'message',
          text: `Logged in to ${saved.base_url} as application ${saved.application_id}; saved to ${saved.config_path}`,
        }),
      );
    });
}
