import { Command, Option } from 'commander';
import packageJson from '../package.json' with { type: 'json' };
import { registerAccess } from './commands/access.ts';
import { registerApiKeys } from './commands/api-keys.ts';
import { registerApps } from './commands/apps.ts';
import { registerAuditLogs } from './commands/audit-logs.ts';
import { registerAuthz } from './commands/authz.ts';
import { registerBilling } from './commands/billing.ts';
import { registerDomains } from './commands/domains.ts';
import { registerEvents } from './commands/events.ts';
import { registerLogin } from './commands/login.ts';
import { registerMessages } from './commands/messages.ts';
import { registerMigrate } from './commands/migrate.ts';
import { registerOAuth2 } from './commands/oauth2.ts';
import { registerOperators } from './commands/operators.ts';
import { registerOrgs } from './commands/orgs.ts';
import { registerPortal } from './commands/portal.ts';
import { registerProviders } from './commands/providers.ts';
import { registerSaml } from './commands/saml.ts';
import { registerSessions } from './commands/sessions.ts';
import { registerSigningKeys } from './commands/signing-keys.ts';
import { registerStats } from './commands/stats.ts';
import { registerTemplates } from './commands/templates.ts';
import { registerUsers } from './commands/users.ts';
import { registerWebhooks } from './commands/webhooks.ts';
import { EXIT_CODES_HELP } from './errors.ts';

/** `json`: usage errors are reported as JSON by `reportError`, so commander must not print its own line first. */
export function createProgram({ json = false }: { json?: boolean } = {}): Command {
  const program = new Command('gatehouse')
    .description('Manage a Gatehouse identity service from the command line')
    .version(packageJson.version)
    .addOption(new Option('--json', 'print the raw JSON result instead of a table'))
    .addOption(new Option('--base-url <url>', 'where the service runs (default http://localhost:4000)').env('GATEHOUSE_BASE_URL'))
    .addOption(new Option('--application-id <id>', 'the application to act on').env('GATEHOUSE_APPLICATION_ID'))
    .addOption(new Option('--secret-key <key>', 'a secret API key of that application').env('GATEHOUSE_SECRET_KEY'))
    .configureHelp({ showGlobalOptions: true })
    .addHelpText('after', EXIT_CODES_HELP)
    // Inherited by every subcommand created below.
    .configureOutput(json ? { outputError: () => {} } : {})
    // Commander throws instead of exiting, so every failure leaves through the one handler below.
    .exitOverride();
  registerLogin(program);
  registerApps(program);
  registerOperators(program);
  registerApiKeys(program);
  registerUsers(program);
  registerOrgs(program);
  registerPortal(program);
  registerSaml(program);
  registerProviders(program);
  registerOAuth2(program);
  registerSessions(program);
  registerSigningKeys(program);
  registerTemplates(program);
  registerMessages(program);
  registerEvents(program);
  registerAuditLogs(program);
  registerWebhooks(program);
  registerDomains(program);
  registerAuthz(program);
  registerBilling(program);
  registerAccess(program);
  registerStats(program);
  registerMigrate(program);
  return program;
}
