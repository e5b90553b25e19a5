import { setTimeout as sleep } from 'node:timers/promises';
import { type GatehouseClient, GatehouseError, type Message } from '@gatehouse/sdk';
import { type Command, Option } from 'commander';
import { parseInteger } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { type OutputMode, outputMode, present } from '../output.ts';
import { formatValue } from '../ui/format.ts';
import { type Column, pageSummary, tableView } from '../ui/view.ts';

const POLL_INTERVAL_MS = 2_000;
/** One poll reads at most this many new messages (10 pages); a burst beyond it is skipped, not waited for. */
const MAX_PAGES_PER_POLL = 10;
/** Ids remembered to tell new messages from printed ones: far more than one poll can print. */
const REMEMBERED_IDS = 5_000;

const columns: Column<Message>[] = [
  { key: 'id', header: 'ID', value: (m) => m.id },
  { key: 'created_at', header: 'CREATED', value: (m) => m.created_at },
  { key: 'template_key', header: 'TEMPLATE', value: (m) => m.template_key },
  { key: 'channel', header: 'CHANNEL', value: (m) => m.channel },
  { key: 'to', header: 'TO', value: (m) => m.to },
  { key: 'status', header: 'STATUS', value: (m) => m.status },
  { key: 'subject', header: 'SUBJECT', value: (m) => m.subject },
];

/** The columns of a followed stream on a terminal: fixed widths, the subject takes what is left of the line. */
const streamColumns: Array<[header: string, width: number, value: (m: Message) => unknown]> = [
  ['CREATED', 16, (m) => m.created_at],
  ['STATUS', 13, (m) => m.status],
  ['TEMPLATE', 18, (m) => m.template_key],
  ['TO', 30, (m) => m.to],
  ['SUBJECT', 0, (m) => m.subject],
];

function terminalLine(cells: string[], width: number): string {
  const cut = (text: string, size: number) => (text.length > size ? `${text.slice(0, size - 1)}…` : text.padEnd(size));
  const line = cells.map((cell, i) => (streamColumns[i]![1] ? cut(cell, streamColumns[i]![1]) : cell)).join('  ');
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

/** Prints messages as a stream, oldest first: one JSON object a line, tab-separated fields, or terminal lines. */
function streamPrinter(mode: OutputMode) {
  let headerDone = false;
  return (messages: Message[]) => {
    const lines: string[] = [];
    if (mode === 'json') {
      for (const m of messages) lines.push(JSON.stringify(m));
    } else if (mode === 'plain') {
      if (!headerDone) lines.push(columns.map((c) => c.key).join('\t'));
      for (const m of messages) lines.push(columns.map((c) => formatValue(c.value(m), 'plain')).join('\t'));
    } else {
      const width = process.stdout.columns || 80;
      if (!headerDone)
        lines.push(
          terminalLine(
            streamColumns.map(([header]) => header),
            width,
          ),
        );
      for (const m of messages) {
        lines.push(
          terminalLine(
            streamColumns.map(([, , value]) => formatValue(value(m), 'rich', true)),
            width,
          ),
        );
      }
    }
    headerDone = true;
    if (lines.length) process.stdout.write(`${lines.join('\n')}\n`);
  };
}

/** The messages newer than the newest one printed, newest first: pages until a known id. */
async function newMessages(gatehouse: GatehouseClient, seen: Set<string>): Promise<Message[]> {
  const found: Message[] = [];
  const taken = new Set<string>();
  for (let page = 0; page < MAX_PAGES_PER_POLL; page++) {
    const { messages } = await gatehouse.messages.list({ limit: 100, offset: page * 100 });
    for (const m of messages) {
      if (seen.has(m.id)) return found;
      // Rows arriving between two pages shift the next page: the same message can come twice.
      if (!taken.has(m.id)) found.push(m);
      taken.add(m.id);
    }
    if (messages.length < 100) return found;
  }
  return found;
}

function remember(seen: Set<string>, messages: Message[]) {
  for (const m of messages) seen.add(m.id);
  // Oldest ids out first (a Set keeps insertion order).
  for (const id of seen) {
    if (seen.size <= REMEMBERED_IDS) break;
    seen.delete(id);
  }
}

export function registerMessages(program: Command): void {
  const messages = program.command('messages').description('Read the message log (what the service sent or handed over)');

  messages
    .command('tail')
    .description('Show the latest messages, newest first; --follow keeps printing new ones as they are logged')
    .option('--limit <n>', 'how many of the latest messages (1-100, default 25)', parseInteger)
    .option('-f, --follow', `poll every ${POLL_INTERVAL_MS / 1000} s and print new messages until interrupted (Ctrl-C)`)
    // For tests and scripts: stop after this many polls.
    .addOption(new Option('--max-polls <n>').argParser(parseInteger).hideHelp())
    .addHelpText(
      'after',
      '\nWith --follow the output is a stream, oldest first like tail -f: the latest messages, then each new one;\n' +
        '--json then prints one JSON object per line.',
    )
    .action(async (options: { limit?: number; follow?: boolean; maxPolls?: number }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const input = options.limit !== undefined ? { limit: options.limit } : {};
      if (!options.follow) {
        await present(
          command,
          'Fetching messages',
          () => gatehouse.messages.list(input),
          (page) => tableView(columns, page.messages, 'No messages.', pageSummary(page, page.messages.length)),
        );
        return;
      }
      const print = streamPrinter(outputMode(command));
      const seen = new Set<string>();
      const latest = (await gatehouse.messages.list(input)).messages;
      // Everything logged before the first page counts as printed, so a poll never goes back further.
      remember(seen, [...latest].reverse());
      print([...latest].reverse());
      for (let poll = 0; options.maxPolls === undefined || poll < options.maxPolls; poll++) {
        await sleep(POLL_INTERVAL_MS);
        let fresh: Message[];
        try {
          fresh = (await newMessages(gatehouse, seen)).reverse();
        } catch (error) {
          // A server restart or a network blip should not end a long tail; an API refusal (a revoked key) does.
          if (!(error instanceof GatehouseError && error.code === 'network_error')) throw error;
          process.stderr.write(`warning: ${error.message}; trying again in ${POLL_INTERVAL_MS / 1000} s\n`);
          continue;
        }
        remember(seen, fresh);
        print(fresh);
      }
    });
}
