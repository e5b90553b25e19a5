import { createHmac, randomBytes } from 'node:crypto';
import type { WebhookDelivery, WebhookEndpoint } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { pageInput, pageOptions, parseInteger, splitList } from '../args.ts';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

const columns: Column<WebhookEndpoint>[] = [
  { key: 'id', header: 'ID', value: (w) => w.id },
  { key: 'url', header: 'URL', value: (w) => w.url },
  { key: 'status', header: 'STATUS', value: (w) => (w.disabled_reason ? `${w.status} (${w.disabled_reason})` : w.status) },
  { key: 'event_types', header: 'EVENTS', value: (w) => (w.event_types.length ? w.event_types : 'all') },
  { key: 'description', header: 'DESCRIPTION', value: (w) => w.description },
  { key: 'created_at', header: 'CREATED', value: (w) => w.created_at },
];

type DeliveryRow = Omit<WebhookDelivery, 'attempt_log'>;
const deliveryColumns: Column<DeliveryRow>[] = [
  { key: 'id', header: 'ID', value: (d) => d.id },
  { key: 'event_type', header: 'EVENT', value: (d) => d.event_type },
  { key: 'status', header: 'STATUS', value: (d) => d.status },
  { key: 'attempts', header: 'ATTEMPTS', value: (d) => d.attempts },
  { key: 'response_status', header: 'HTTP', value: (d) => d.response_status },
  { key: 'last_error', header: 'ERROR', value: (d) => d.last_error },
  { key: 'next_attempt_at', header: 'NEXT ATTEMPT', value: (d) => d.next_attempt_at },
  { key: 'created_at', header: 'CREATED', value: (d) => d.created_at },
];

const STATUSES = ['active', 'disabled'];
const parseStatus = (value: string) => {
  if (!STATUSES.includes(value)) throw new InvalidArgumentError('expected active or disabled.');
  return value as 'active' | 'disabled';
};
const DELIVERY_STATUSES = ['pending', 'succeeded', 'failed'];
const parseDeliveryStatus = (value: string) => {
  if (!DELIVERY_STATUSES.includes(value)) throw new InvalidArgumentError('expected pending, succeeded or failed.');
  return value as 'pending' | 'succeeded' | 'failed';
};

/** Standard Webhooks signing (`v1,` HMAC-SHA256 over `id.timestamp.body` with the base64 key after `whsec_`). */
export function signWebhook(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

export function registerWebhooks(program: Command): void {
  const webhooks = program.command('webhooks').description('Manage webhook endpoints and their deliveries');

  webhooks
    .command('list')
    .description('List webhook endpoints')
    .action(async (_options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing webhook endpoints',
        () => gatehouse.webhooks.list(),
        (endpoints) => tableView(columns, endpoints, 'No webhook endpoints.'),
      );
    });

  webhooks
    .command('create')
    .description('Create a webhook endpoint (its signing secret is shown once)')
    .argument('<url>', 'https URL that receives the events')
    .option('--event <type...>', 'event kinds to receive, e.g. user.created (default: all)')
    .option('--description <text>', 'a note to recognise it by')
    .action(async (url: string, options: { event?: string[]; description?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Creating the webhook endpoint',
        () =>
          gatehouse.webhooks.create({
            url,
            event_types: splitList(options.event) as never,
            ...(options.description !== undefined ? { description: options.description } : {}),
          }),
        (endpoint) => recordView(endpoint, 'The signing secret is shown only now (and on rotate-secret): store it.'),
      );
    });

  webhooks
    .command('show')
    .description('Show a webhook endpoint')
    .argument('<id>', 'webhook endpoint id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Reading the webhook endpoint',
        () => gatehouse.webhooks.get({ id }),
        (endpoint) => recordView(endpoint),
      );
    });

  webhooks
    .command('update')
    .description('Change a webhook endpoint')
    .argument('<id>', 'webhook endpoint id')
    .option('--url <url>', 'new receiving URL')
    .option('--event <type...>', 'event kinds to receive (replaces the list)')
    .option('--all-events', 'receive every event kind')
    .option('--description <text>', 'new description')
    .option('--status <status>', 'active or disabled', parseStatus)
    .action(
      async (
        id: string,
        options: { url?: string; event?: string[]; allEvents?: boolean; description?: string; status?: 'active' | 'disabled' },
        command: Command,
      ) => {
        const gatehouse = await secretKeyClient(command);
        const eventTypes = options.allEvents ? [] : options.event ? splitList(options.event) : undefined;
        await present(
          command,
          'Updating the webhook endpoint',
          () =>
            gatehouse.webhooks.update({
              id,
              ...(options.url !== undefined ? { url: options.url } : {}),
              ...(eventTypes !== undefined ? { event_types: eventTypes as never } : {}),
              ...(options.description !== undefined ? { description: options.description } : {}),
              ...(options.status !== undefined ? { status: options.status } : {}),
            }),
          (endpoint) => recordView(endpoint),
        );
      },
    );

  webhooks
    .command('delete')
    .description('Delete a webhook endpoint and its delivery history; there is no undo')
    .argument('<id>', 'webhook endpoint id')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (id: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'deleting a webhook endpoint removes its delivery history');
      const gatehouse = await secretKeyClient(command);
      if (ask) {
        const { url } = await gatehouse.webhooks.get({ id });
        if (!(await confirm(`Delete the webhook endpoint ${url} (${id}) and its delivery history? There is no undo.`))) {
          throw new Error('cancelled: nothing was deleted');
        }
      }
      await present(
        command,
        'Deleting the webhook endpoint',
        () => gatehouse.webhooks.delete({ id }),
        (deleted) => ({ kind: 'message', text: `Deleted webhook endpoint ${deleted.id}` }),
      );
    });

  webhooks
    .command('rotate-secret')
    .description('Rotate the signing secret (the old one keeps signing beside it for 24 hours)')
    .argument('<id>', 'webhook endpoint id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Rotating the signing secret',
        () => gatehouse.webhooks.rotateSecret({ id }),
        (endpoint) => recordView(endpoint, 'The new secret is shown only now. The old one still signs for 24 hours.'),
      );
    });

  webhooks
    .command('test')
    .description('Send a webhook.test event to this endpoint')
    .argument('<id>', 'webhook endpoint id')
    .action(async (id: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Sending a test event',
        () => gatehouse.webhooks.test({ id }),
        (delivery) => recordView(delivery, 'Queued: see `gatehouse webhooks deliveries` for the outcome.'),
      );
    });

  pageOptions(
    webhooks
      .command('deliveries')
      .description("List an endpoint's deliveries, newest first, or show one with every attempt")
      .argument('<id>', 'webhook endpoint id')
      .argument('[delivery]', 'a delivery id: show it with its attempts')
      .option('--status <status>', 'pending, succeeded or failed', parseDeliveryStatus),
  ).action(
    async (
      id: string,
      delivery: string | undefined,
      options: { status?: 'pending' | 'succeeded' | 'failed'; limit?: number; offset?: number },
      command: Command,
    ) => {
      const gatehouse = await secretKeyClient(command);
      if (delivery) {
        await present(
          command,
          'Reading the delivery',
          () => gatehouse.webhooks.deliveries.get({ id, delivery_id: delivery }),
          (d) => recordView({ ...d, attempt_log: d.attempt_log.map((a) => JSON.stringify(a)) }),
        );
        return;
      }
      await present(
        command,
        'Listing deliveries',
        () =>
          gatehouse.webhooks.deliveries.list({
            id,
            ...(options.status ? { status: options.status } : {}),
            ...pageInput(options),
          }),
        (page) => tableView(deliveryColumns, page.deliveries, 'No deliveries.', pageSummary(page, page.deliveries.length)),
      );
    },
  );

  webhooks
    .command('retry')
    .description('Send a delivery again now')
    .argument('<id>', 'webhook endpoint id')
    .argument('<delivery>', 'delivery id')
    .action(async (id: string, delivery: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Queueing the delivery again',
        () => gatehouse.webhooks.deliveries.retry({ id, delivery_id: delivery }),
        (d) => recordView(d),
      );
    });

  webhooks
    .command('recover')
    .description('Queue again every failed delivery since a time')
    .argument('<id>', 'webhook endpoint id')
    .requiredOption('--since <time>', 'ISO 8601 time, e.g. 2026-11-24T00:00:00Z')
    .action(async (id: string, options: { since: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Recovering failed deliveries',
        () => gatehouse.webhooks.recover({ id, since: options.since }),
        (result) => ({ kind: 'message', text: `Queued ${result.recovered} failed deliveries again` }),
      );
    });

  webhooks
    .command('listen')
    .description('Forward new events to a local URL, signed like real deliveries (polls the event log, like `stripe listen`)')
    .requiredOption('--forward-to <url>', 'where to POST each event, e.g. http://localhost:3000/hooks')
    .option('--secret <whsec>', 'signing secret to use (default: a new one, printed at start)')
    .option('--interval <ms>', 'polling interval in milliseconds (default 1000)', parseInteger)
    .option('--once', 'forward what is new once, then exit (scripts and tests)')
    .action(async (options: { forwardTo: string; secret?: string; interval?: number; once?: boolean }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const secret = options.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
      process.stderr.write(`Forwarding events to ${options.forwardTo}\nSigning secret: ${secret}\n`);
      const seen = new Set<string>();
      const since = new Date(Date.now() - (options.once ? 60_000 : 0)).toISOString();
      for (;;) {
        const page = await gatehouse.events.list({ limit: 100 });
        const fresh = page.events.filter((e) => e.created_at >= since && !seen.has(e.id)).reverse();
        for (const event of fresh) {
          seen.add(event.id);
          const body = JSON.stringify({ type: event.type, timestamp: event.created_at, data: event.data });
          const timestamp = Math.floor(Date.now() / 1000);
          const response = await fetch(options.forwardTo, {
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              'webhook-id': event.id,
              'webhook-timestamp': String(timestamp),
              'webhook-signature': signWebhook(secret, event.id, timestamp, body),
            },
            body,
          }).catch((error: unknown) => ({ status: `failed (${(error as Error).message})` }));
          process.stdout.write(`${event.created_at}  ${event.type}  ${event.id}  -> ${response.status}\n`);
        }
        if (options.once) return;
        await new Promise((r) => setTimeout(r, options.interval ?? 1000));
      }
    });
}
