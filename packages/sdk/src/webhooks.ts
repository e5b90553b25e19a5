import type { AppRouter } from '@gatehouse/api';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { Webhook } from 'standardwebhooks';

/** A delivery that did not verify: wrong signature or secret, a changed body, a timestamp off by more than 5 minutes. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/** Every kind of event the service emits (what an endpoint's `event_types` and `events.list({ type })` accept). */
export type WebhookEventType = NonNullable<Exclude<inferRouterInputs<AppRouter>['events']['list'], void>['type']>;

/** An entry of the event log as the router types it: one member per kind, its `data` typed by the kind's schema. */
type LoggedEvent = inferRouterOutputs<AppRouter>['events']['list']['events'][number];

/**
 * What Gatehouse POSTs to a webhook endpoint, once its signature has been verified: the event log's entry (see
 * `events.list`), one member per event kind, so that a `switch (event.type)` narrows to that kind. Narrow it to the
 * kinds an endpoint subscribes to with the type parameter: `WebhookEvent<'user.created' | 'user.deleted'>`.
 */
export type WebhookEvent<T extends WebhookEventType = WebhookEventType> = {
  [K in T]: {
    /** The event kind, e.g. `user.created`. */
    type: K;
    /** When the change happened (ISO 8601 UTC): the event's `created_at`. */
    timestamp: string;
    /**
     * What changed, as the kind's payload schema on the server declares it: for most kinds the resource as the API
     * answers it, for deletions its `id`.
     */
    data: Extract<LoggedEvent, { type: K }>['data'];
  };
}[T];

/** Request headers as any server framework gives them: a fetch `Headers`, Node's `IncomingHttpHeaders`, or a record. */
export type WebhookHeaders = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

const NAMES = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function pick(headers: WebhookHeaders): Record<(typeof NAMES)[number], string> {
  const read = (name: string): string => {
    if (typeof (headers as { get?: unknown }).get === 'function')
      return (headers as { get(n: string): string | null }).get(name) ?? '';
    const record = headers as Record<string, string | string[] | undefined>;
    const key = Object.keys(record).find((k) => k.toLowerCase() === name);
    const value = key === undefined ? undefined : record[key];
    return (Array.isArray(value) ? value[0] : value) ?? '';
  };
  return Object.fromEntries(NAMES.map((name) => [name, read(name)])) as Record<(typeof NAMES)[number], string>;
}

/**
 * Verifies a delivery from Gatehouse on the receiving server and answers the event: the Standard Webhooks signature
 * (`webhook-signature`, any of its `v1,` signatures, so both secrets verify during a rotation), over the exact raw
 * body, with a timestamp within 5 minutes. Throws `WebhookVerificationError` otherwise — answer 400 then.
 * Deduplicate on the `webhook-id` header (the event id): delivery is at-least-once.
 *
 * ```ts
 * import { verifyWebhook } from '@gatehouse/sdk/webhooks';
 * const event = verifyWebhook(rawBody, request.headers, process.env.GATEHOUSE_WEBHOOK_SECRET!);
 * ```
 *
 * @param payload the raw request body, exactly as received (a re-serialized JSON object does not verify)
 * @param secret the endpoint's `whsec_…` secret
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  try {
    return new Webhook(secret).verify(body, pick(headers)) as WebhookEvent;
  } catch (error) {
    // The library's own error type is not part of the published types (its declarations need @types/node).
    throw new WebhookVerificationError((error as Error)?.message ?? 'The webhook did not verify');
  }
}
