import type { Event } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { pageInput, pageOptions } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, tableView } from '../ui/view.ts';

const columns: Column<Event>[] = [
  { key: 'id', header: 'ID', value: (e) => e.id },
  { key: 'type', header: 'TYPE', value: (e) => e.type },
  { key: 'created_at', header: 'CREATED', value: (e) => e.created_at },
  { key: 'data', header: 'DATA', value: (e) => JSON.stringify(e.data) },
];

export function registerEvents(program: Command): void {
  const events = program.command('events').description('Read the event log: every change, newest first');
  pageOptions(
    events
      .command('list')
      .description('List events, newest first')
      .option('--type <type>', 'only events of this type, e.g. user.created'),
  ).action(async (options: { type?: string; limit?: number; offset?: number }, command: Command) => {
    const gatehouse = await secretKeyClient(command);
    await present(
      command,
      'Listing events',
      () => gatehouse.events.list({ ...(options.type ? { type: options.type as never } : {}), ...pageInput(options) }),
      (page) => tableView(columns, page.events, 'No events.', pageSummary(page, page.events.length)),
    );
  });
}
