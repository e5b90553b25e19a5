import type { Application } from '@gatehouse/sdk';
import { type Command, Option } from 'commander';
import { pageInput, pageOptions, parseJsonObject, splitList } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { applicationClient, operatorClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';
import { registerBranding } from './branding.ts';

const columns: Column<Application>[] = [
  { key: 'id', header: 'ID', value: (a) => a.id },
  { key: 'name', header: 'NAME', value: (a) => a.name },
  { key: 'environment', header: 'ENVIRONMENT', value: (a) => a.environment },
  { key: 'allowed_origins', header: 'ORIGINS', value: (a) => a.allowed_origins },
  { key: 'reserved', header: 'RESERVED', value: (a) => (a.reserved ? 'reserved (console)' : '') },
  { key: 'created_at', header: 'CREATED', value: (a) => a.created_at },
];

/**
 * Applications are the operator's: create, list and delete use the operator token; get, update, branding and
 * sign-in-url act on the logged-in application with its secret key.
 */
export function registerApps(program: Command): void {
  const apps = program
    .command('apps')
    .description(
      'Create, list and delete applications (operator token: GATEHOUSE_OPERATOR_TOKEN or <data dir>/operator-token); ' +
        'get, update, branding and sign-in-url act on the logged-in application (secret key)',
    );

  apps
    .command('create')
    .description('Create an application and its first secret key (shown once)')
    .argument('<name>', 'application name')
    .addOption(
      new Option('--environment <environment>', 'sk_test_ keys for development, sk_live_ for production').choices([
        'development',
        'production',
      ]),
    )
    .option('--origin <url...>', 'allowed browser origin, e.g. https://app.example.com (repeatable)')
    .action(
      async (name: string, options: { environment?: 'development' | 'production'; origin?: string[] }, command: Command) => {
        const gatehouse = await operatorClient(command);
        await present(
          command,
          'Creating the application',
          () =>
            gatehouse.applications.create({
              name,
              ...(options.environment ? { environment: options.environment } : {}),
              ...(options.origin ? { allowed_origins: splitList(options.origin) } : {}),
            }),
          ({ application, secret_key }) =>
            recordView(
              {
                id: application.id,
                name: application.name,
                environment: application.environment,
                allowed_origins: application.allowed_origins,
                created_at: application.created_at,
                secret_key_id: secret_key.id,
                secret_key: secret_key.secret,
              },
              'The secret key is shown only once: store it now. To use it: ' +
                `gatehouse login --application-id ${application.id} --secret-key <secret_key>`,
            ),
        );
      },
    );

  pageOptions(apps.command('list').description('List applications, newest first')).action(
    async (options: { limit?: number; offset?: number }, command: Command) => {
      const gatehouse = await operatorClient(command);
      await present(
        command,
        'Listing applications',
        () => gatehouse.applications.list(pageInput(options)),
        (page) => tableView(columns, page.applications, 'No applications.', pageSummary(page, page.applications.length)),
      );
    },
  );

  apps
    .command('get')
    .description('Show the application you are logged in to (secret key): its origins and settings')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the application',
        () => gatehouse.applications.get({ id: applicationId }),
        (app) => recordView({ ...app, settings: JSON.stringify(app.settings) }),
      );
    });

  apps
    .command('update')
    .description('Change the application you are logged in to (secret key): name, allowed origins, settings')
    .option('--name <name>', 'new name')
    .option('--origin <url...>', 'the allowed browser origins, replacing the current list (repeatable)')
    .option('--no-origins', 'allow no browser origin')
    .option(
      '--settings <json>',
      'settings to change, a JSON object: each top-level key given replaces that key (e.g. \'{"sign_up":"closed"}\')',
      parseJsonObject,
    )
    .action(
      async (
        options: { name?: string; origin?: string[]; origins?: boolean; settings?: Record<string, unknown> },
        command: Command,
      ) => {
        const origins = options.origins === false ? [] : options.origin ? splitList(options.origin) : undefined;
        if (options.name === undefined && origins === undefined && !options.settings) {
          throw new UsageError('nothing to change: pass --name, --origin, --no-origins or --settings');
        }
        const { gatehouse, applicationId } = await applicationClient(command);
        await present(
          command,
          'Updating the application',
          () =>
            gatehouse.applications.update({
              id: applicationId,
              ...(options.name !== undefined ? { name: options.name } : {}),
              ...(origins !== undefined ? { allowed_origins: origins } : {}),
              ...(options.settings ? { settings: options.settings as never } : {}),
            }),
          (app) => recordView({ ...app, settings: JSON.stringify(app.settings) }),
        );
      },
    );

  apps
    .command('delete')
    .description('Delete an application and all its data (users, organizations, sessions, keys); there is no undo')
    .argument('<id>', 'application id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'deleting an application deletes all its data');
      const gatehouse = await operatorClient(command);
      if (ask) {
        const { name } = await gatehouse.applications.get({ id });
        const question = `Delete application "${name}" (${id}) with all its users, organizations, sessions and keys? There is no undo.`;
        if (!(await confirm(question))) throw new Error('cancelled: nothing was deleted');
      }
      await present(
        command,
        'Deleting the application',
        () => gatehouse.applications.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted application ${deleted.id}` }),
      );
    });

  registerBranding(apps);
}
