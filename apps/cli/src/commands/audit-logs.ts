import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type AuditLogEntry, type AuditLogFilters, type GatehouseClient, GatehouseError } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { pageInput, pageOptions, parseInteger } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { type OutputMode, outputMode, present } from '../output.ts';
import { formatValue } from '../ui/format.ts';
import { type Column, pageSummary, tableView } from '../ui/view.ts';

/** One poll reads at most this many new entries (10 pages); a burst beyond it is skipped, not waited for. */
const MAX_PAGES_PER_POLL = 10;
/** Ids remembered to tell new entries from printed ones: far more than one poll can print. */
const REMEMBERED_IDS = 5_000;

const pair = (value: { type: string; id: string } | null) => (value ? `${value.type}:${value.id}` : null);

const columns: Column<AuditLogEntry>[] = [
  { key: 'id', header: 'ID', value: (e) => e.id },
  { key: 'occurred_at', header: 'OCCURRED', value: (e) => e.occurred_at },
  { key: 'action', header: 'ACTION', value: (e) => e.action },
  { key: 'actor', header: 'ACTOR', value: (e) => pair(e.actor) },
  { key: 'target', header: 'TARGET', value: (e) => pair(e.target) },
  { key: 'organization_id', header: 'ORGANIZATION', value: (e) => e.organization_id },
  { key: 'ip', header: 'IP', value: (e) => e.ip },
];

interface FilterOptions {
  organizationId?: string;
  actorId?: string;
  action?: string;
  targetId?: string;
  since?: string;
  until?: string;
}

/** The filters every audit-logs command takes (the server checks them: 422 for a malformed one). */
const filterOptions = (command: Command): Command =>
  command
    .option('--organization-id <id>', 'entries of this organization')
    .option('--actor-id <id>', 'entries of this actor (a user, API key, directory…)')
    .option('--action <action>', 'an event type (user.created) or a prefix ending in .* (organization.*)')
    .option('--target-id <id>', 'entries whose target has this id')
    .option('--since <time>', 'entries at or after this ISO 8601 time')
    .option('--until <time>', 'entries before this ISO 8601 time');

const filtersOf = (options: FilterOptions): AuditLogFilters => ({
  ...(options.organizationId ? { organization_id: options.organizationId } : {}),
  ...(options.actorId ? { actor_id: options.actorId } : {}),
  ...(options.action ? { action: options.action } : {}),
  ...(options.targetId ? { target_id: options.targetId } : {}),
  ...(options.since ? { since: options.since } : {}),
  ...(options.until ? { until: options.until } : {}),
});

/** Prints entries as a stream, oldest first: one JSON object a line, or tab-separated fields after a header. */
function streamPrinter(mode: OutputMode) {
  let headerDone = false;
  return (entries: AuditLogEntry[]) => {
    const lines: string[] = [];
    if (mode === 'json') {
      for (const e of entries) lines.push(JSON.stringify(e));
    } else {
      if (!headerDone) lines.push(columns.map((c) => (mode === 'plain' ? c.key : c.header)).join('\t'));
      for (const e of entries) lines.push(columns.map((c) => formatValue(c.value(e), 'plain')).join('\t'));
    }
    headerDone = true;
    if (lines.length) process.stdout.write(`${lines.join('\n')}\n`);
  };
}

/** The entries newer than the newest printed, newest first: pages until a known id. */
async function newEntries(gatehouse: GatehouseClient, filters: AuditLogFilters, seen: Set<string>) {
  const found: AuditLogEntry[] = [];
  const taken = new Set<string>();
  for (let page = 0; page < MAX_PAGES_PER_POLL; page++) {
    const { audit_logs } = await gatehouse.auditLogs.list({ ...filters, limit: 100, offset: page * 100 });
    for (const e of audit_logs) {
      if (seen.has(e.id)) return found;
      // Entries written between two pages shift the next page: the same entry can come twice.
      if (!taken.has(e.id)) found.push(e);
      taken.add(e.id);
    }
    if (audit_logs.length < 100) return found;
  }
  return found;
}

function remember(seen: Set<string>, entries: AuditLogEntry[]) {
  for (const e of entries) seen.add(e.id);
  for (const id of seen) {
    if (seen.size <= REMEMBERED_IDS) break;
    seen.delete(id);
  }
}

function parseSeconds(value: string): number {
  const n = parseInteger(value);
  if (n < 1 || n > 3600) throw new InvalidArgumentError('expected 1 to 3600 seconds.');
  return n;
}

function parseFormat(value: string): 'ndjson' | 'csv' {
  if (value !== 'ndjson' && value !== 'csv') throw new InvalidArgumentError('expected ndjson or csv.');
  return value;
}

export function registerAuditLogs(program: Command): void {
  const auditLogs = program
    .command('audit-logs')
    .description('Read the audit log: who did what, when and from where (needs the audit_logs:read scope)');

  pageOptions(filterOptions(auditLogs.command('list').description('List audit log entries, newest first'))).action(
    async (options: FilterOptions & { limit?: number; offset?: number }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing audit log entries',
        () => gatehouse.auditLogs.list({ ...filtersOf(options), ...pageInput(options) }),
        (page) => tableView(columns, page.audit_logs, 'No audit log entries.', pageSummary(page, page.audit_logs.length)),
      );
    },
  );

  filterOptions(
    auditLogs
      .command('tail')
      .description('Print the latest entries, then each new one as it is written, until interrupted (Ctrl-C)')
      .option('--limit <n>', 'how many of the latest entries to print first (0-100, default 10)', parseInteger)
      .option('--interval <seconds>', 'seconds between polls (default 2)', parseSeconds),
  )
    // For tests and scripts: stop after this many polls.
    .addOption(new Option('--max-polls <n>').argParser(parseInteger).hideHelp())
    .addHelpText('after', '\nThe output is a stream, oldest first like tail -f; --json prints one JSON object per line.')
    .action(async (options: FilterOptions & { limit?: number; interval?: number; maxPolls?: number }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const filters = filtersOf(options);
      const intervalMs = (options.interval ?? 2) * 1000;
      const limit = options.limit ?? 10;
      if (limit < 0 || limit > 100) throw new InvalidArgumentError('--limit: expected 0 to 100.');
      const print = streamPrinter(outputMode(command));
      // Ctrl-C ends the tail between two polls (or during the wait), with exit code 0.
      const stop = new AbortController();
      const interrupt = () => stop.abort();
      process.once('SIGINT', interrupt);
      process.once('SIGTERM', interrupt);
      try {
        const seen = new Set<string>();
        // Everything before the first page counts as printed, so a poll never goes back further.
        const latest = (await gatehouse.auditLogs.list({ ...filters, limit: 100 })).audit_logs;
        remember(seen, [...latest].reverse());
        print(latest.slice(0, limit).reverse());
        for (let poll = 0; options.maxPolls === undefined || poll < options.maxPolls; poll++) {
          try {
            await sleep(intervalMs, undefined, { signal: stop.signal });
          } catch {
            return;
          }
          let fresh: AuditLogEntry[];
          try {
            fresh = (await newEntries(gatehouse, filters, seen)).reverse();
          } catch (error) {
            // A server restart or a network blip should not end a long tail; an API refusal (a revoked key) does.
            if (!(error instanceof GatehouseError && error.code === 'network_error')) throw error;
            process.stderr.write(`warning: ${error.message}; trying again in ${intervalMs / 1000} s\n`);
            continue;
          }
          remember(seen, fresh);
          print(fresh);
          if (stop.signal.aborted) return;
        }
      } finally {
        process.off('SIGINT', interrupt);
        process.off('SIGTERM', interrupt);
      }
    });

  filterOptions(
    auditLogs
      .command('export')
      .description('Write every matching entry to stdout as it streams, newest first: gatehouse audit-logs export > log.ndjson')
      .addOption(
        new Option('--format <format>', 'ndjson (one JSON entry a line) or csv').default('ndjson').argParser(parseFormat),
      ),
  ).action(async (options: FilterOptions & { format: 'ndjson' | 'csv' }, command: Command) => {
    const gatehouse = await secretKeyClient(command);
    const body = await gatehouse.auditLogs.download({ ...filtersOf(options), format: options.format });
    // The web stream's chunks are bytes; stdout keeps to its reader's pace (a file, a pipe).
    await pipeline(Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>), process.stdout, {
      end: false,
    });
  });
}
