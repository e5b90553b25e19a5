import { readFile } from 'node:fs/promises';
import type { TemplateCatalogEntry } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { parseBoolean } from '../args.ts';
import { applicationClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const catalogColumns: Column<TemplateCatalogEntry>[] = [
  { key: 'key', header: 'KEY', value: (t) => t.key },
  { key: 'channel', header: 'CHANNEL', value: (t) => t.channel },
  { key: 'delivered', header: 'DELIVERED', value: (t) => t.delivered },
  { key: 'has_subject', header: 'SUBJECT', value: (t) => t.has_subject },
  { key: 'label', header: 'LABEL', value: (t) => t.label },
];

/** `--body-file page.html`, or `-` for standard input. */
async function readBody(path: string): Promise<string> {
  try {
    if (path !== '-') return await readFile(path, 'utf8');
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  } catch (error) {
    throw new UsageError(
      `cannot read the body file ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
    );
  }
}

export function registerTemplates(program: Command): void {
  const templates = program
    .command('templates')
    .description('Customize the messages the service sends (Mustache: {{variable}} escaped, {{{variable}}} raw)');

  templates
    .command('list')
    .description('List the messages the service sends, with their default delivery')
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Listing templates',
        () => gatehouse.templates.catalog({ id: applicationId }),
        (catalog) => tableView(catalogColumns, catalog, 'No templates.'),
      );
    });

  templates
    .command('preview')
    .description('Render a template with example values (or yours), as a message would look')
    .argument('<key>', 'template key, e.g. magic_link')
    .option('--var <name=value...>', 'a variable value, e.g. --var link=https://example.com (repeatable)')
    .action(async (key: string, options: { var?: string[] }, command: Command) => {
      const variables = Object.fromEntries(
        (options.var ?? []).map((pair) => {
          const at = pair.indexOf('=');
          if (at < 1) throw new UsageError(`--var ${pair}: expected name=value`);
          return [pair.slice(0, at), pair.slice(at + 1)];
        }),
      );
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Rendering the template',
        () => gatehouse.templates.preview({ id: applicationId, key, ...(options.var ? { variables } : {}) }),
        (rendered) => recordView({ subject: rendered.subject, text: rendered.text }),
      );
    });

  templates
    .command('test')
    .description('Send the template, as saved, to one address with the example values')
    .argument('<key>', 'template key, e.g. magic_link')
    .requiredOption('--to <address>', 'where the test message goes')
    .action(async (key: string, options: { to: string }, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Sending a test message',
        () => gatehouse.templates.test({ id: applicationId, key, to: options.to }),
        (sent) => recordView(sent),
      );
    });

  templates
    .command('show')
    .description('Show a template as the application sends it (the override where there is one)')
    .argument('<key>', 'template key, e.g. magic_link')
    .action(async (key: string, _options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Fetching the template',
        () => gatehouse.templates.get({ id: applicationId, key }),
        (template) => recordView(template),
      );
    });

  templates
    .command('set')
    .description('Override the subject, the body or the delivery of a template (what is not given is kept)')
    .argument('<key>', 'template key, e.g. magic_link')
    .option('--subject <subject>', 'the subject line (Mustache)')
    .option('--body-file <file>', 'a file holding the HTML body (Mustache); - reads standard input')
    .option(
      '--delivered <bool>',
      'true: the service sends it; false: it only emits message.created for you to deliver',
      parseBoolean,
    )
    .action(async (key: string, options: { subject?: string; bodyFile?: string; delivered?: boolean }, command: Command) => {
      if (options.subject === undefined && options.bodyFile === undefined && options.delivered === undefined) {
        throw new UsageError('nothing to set: give --subject, --body-file or --delivered');
      }
      const body = options.bodyFile === undefined ? undefined : await readBody(options.bodyFile);
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Saving the template',
        () =>
          gatehouse.templates.put({
            id: applicationId,
            key,
            ...(options.subject !== undefined ? { subject: options.subject } : {}),
            ...(body !== undefined ? { body } : {}),
            ...(options.delivered !== undefined ? { delivered: options.delivered } : {}),
          }),
        (template) => recordView(template),
      );
    });

  templates
    .command('reset')
    .description('Drop the override: the template goes back to the default subject, body and delivery')
    .argument('<key>', 'template key, e.g. magic_link')
    .action(async (key: string, _options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Resetting the template',
        () => gatehouse.templates.reset({ id: applicationId, key }),
        (reset) => ({ kind: 'message', text: `Template ${reset.id} is back to the default` }),
      );
    });
}
