import { randomBytes } from 'node:crypto';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import { checkOutboundUrl } from '../../lib/ssrf.ts';
import { iso } from '../../lib/time.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { type WebhookDelivery, WebhookDeliveryEntity } from './webhook-delivery.entity.ts';
import { type WebhookEndpoint, WebhookEndpointEntity } from './webhook-endpoint.entity.ts';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from './webhooks.schema.ts';

/** How long the secret before a rotation keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;
const SECRET_BYTES = 32;

/** What a process's webhook delivery runs with (set by its worker; the defaults are production's). */
export interface WebhookSettings {
  /** `GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1`: also `http` and loopback receivers of development applications. */
  allowInsecure: boolean;
  /** Wakes this process's worker (a test or retry is due now). */
  nudge?: () => void;
}
export const webhookSettings = new WeakMap<Services, WebhookSettings>();
const settingsOf = (services: Services): WebhookSettings => webhookSettings.get(services) ?? { allowInsecure: false };
/**
 * A receiver URL under this process's policy; a refusal names the setting that allows http and loopback. That setting
 * admits them for development applications only: the outbox is shared by every process on the database, so a
 * production tenant's webhooks never depend on one process's flag.
 */
const checkReceiverUrl = (ctx: TenantContext, url: string) =>
  checkOutboundUrl(url, {
    allowInsecure: settingsOf(ctx.services).allowInsecure && ctx.application.environment === 'development',
    insecureSetting: 'GATEHOUSE_ALLOW_INSECURE_WEBHOOKS',
  }).toString();

export const sealContext = (endpointId: string) => `webhook:${endpointId}`;
const newSecret = () => `whsec_${randomBytes(SECRET_BYTES).toString('base64')}`;

export const toEndpointRecord = (endpoint: WebhookEndpoint): WebhookEndpointRecord => ({
  id: endpoint.id,
  url: endpoint.url,
  description: endpoint.description,
  event_types: endpoint.eventTypes,
  // the entity types the column as string; only the schema's values are ever written to it.
  status: endpoint.status as WebhookEndpointRecord['status'],
  disabled_reason: endpoint.disabledReason ?? null,
  created_at: endpoint.createdAt.toISOString(),
  updated_at: endpoint.updatedAt.toISOString(),
});

export const toDeliveryRecord = (d: WebhookDelivery): WebhookDeliveryRecord => ({
  id: d.id,
  endpoint_id: d.endpoint,
  event_id: d.event,
  event_type: d.eventType,
  // the entity types the column as string; only the schema's values are ever written to it.
  status: d.status as WebhookDeliveryRecord['status'],
  attempts: d.attempts,
  response_status: d.responseStatus ?? null,
  last_error: d.lastError ?? null,
  last_attempt_at: iso(d.lastAttemptAt),
  next_attempt_at: iso(d.nextAttemptAt),
  created_at: d.createdAt.toISOString(),
});

/** The event's view of an endpoint: never the secret. */
const eventData = (e: WebhookEndpoint) => ({
  id: e.id,
  url: e.url,
  event_types: e.eventTypes,
  // the entity types the column as string; only the schema's values are ever written to it.
  status: e.status as WebhookEndpointRecord['status'],
});

const uniqueTypes = (types: string[]) => [...new Set(types)];

async function findEndpoint(ctx: TenantContext, id: string): Promise<WebhookEndpoint> {
  const endpoint = await ctx.em.findOne(WebhookEndpointEntity, { id, application: ctx.application.id });
  if (!endpoint) throw notFound('Webhook endpoint');
  return endpoint;
}

export async function createWebhook(ctx: TenantContext, input: { url: string; description: string; event_types: string[] }) {
  const url = checkReceiverUrl(ctx, input.url);
  const id = newId();
  const secret = newSecret();
  const endpoint = ctx.em.create(WebhookEndpointEntity, {
    id,
    application: ctx.application.id,
    url,
    description: input.description,
    eventTypes: uniqueTypes(input.event_types),
    status: 'active',
    disabledReason: null,
    secretSealed: ctx.services.secretBox.encrypt(secret, sealContext(id)),
    previousSecretSealed: null,
    previousSecretExpiresAt: null,
    failingSince: null,
  });
  recordEvent(ctx.em, ctx.application.id, 'webhook_endpoint.created', eventData(endpoint));
  await ctx.em.flush();
  return { ...toEndpointRecord(endpoint), secret };
}

export async function listWebhooks(ctx: TenantContext) {
  const endpoints = await ctx.em.find(
    WebhookEndpointEntity,
    { application: ctx.application.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return endpoints.map(toEndpointRecord);
}

export const getWebhook = async (ctx: TenantContext, id: string) => toEndpointRecord(await findEndpoint(ctx, id));

export async function updateWebhook(
  ctx: TenantContext,
  input: { id: string; url?: string; description?: string; event_types?: string[]; status?: 'active' | 'disabled' },
) {
  const endpoint = await findEndpoint(ctx, input.id);
  const changes: Partial<WebhookEndpoint> = { updatedAt: new Date() };
  if (input.url !== undefined) changes.url = checkReceiverUrl(ctx, input.url);
  if (input.description !== undefined) changes.description = input.description;
  if (input.event_types !== undefined) changes.eventTypes = uniqueTypes(input.event_types);
  if (input.status !== undefined && input.status !== endpoint.status) {
    changes.status = input.status;
    // Enabled or disabled by hand: the failure run starts over, and no reason of the service's remains.
    changes.disabledReason = null;
    changes.failingSince = null;
  }
  const updated: WebhookEndpoint = Object.assign({ ...endpoint }, changes);
  // The change first, then its event, in one transaction: the event's fan-out sees the endpoint as it now is.
  await ctx.em.transactional(async (tx) => {
    await tx.nativeUpdate(WebhookEndpointEntity, { id: endpoint.id }, changes);
    if (changes.status) await (changes.status === 'active' ? wakeDeliveries : parkDeliveries)(tx, endpoint.id);
    recordEvent(tx, endpoint.application, 'webhook_endpoint.updated', eventData(updated));
  });
  return toEndpointRecord(updated);
}

/**
 * A disabled endpoint's pending deliveries are parked (`next_attempt_at` null: out of the worker's due index, so a
 * large backlog of a disabled endpoint costs the claim nothing) and woken, due at once, when it is enabled again.
 */
const parkDeliveries = (em: EntityManager, endpointId: string) =>
  em.execute(`update webhook_deliveries set next_attempt_at = null where endpoint_id = ? and status = 'pending'`, [endpointId]);
const wakeDeliveries = (em: EntityManager, endpointId: string) =>
  em.execute(
    `update webhook_deliveries set next_attempt_at = now() where endpoint_id = ? and status = 'pending' and next_attempt_at is null`,
    [endpointId],
  );

/** S17: the endpoint and its delivery history (deliveries and attempts cascade) go in one statement, one transaction. */
export async function deleteWebhook(ctx: TenantContext, id: string) {
  const endpoint = await findEndpoint(ctx, id);
  ctx.em.remove(endpoint);
  recordEvent(ctx.em, endpoint.application, 'webhook_endpoint.deleted', { id: endpoint.id, url: endpoint.url });
  await ctx.em.flush();
  return { id, deleted: true as const };
}

/** A new secret; the old one keeps signing beside it for 24 hours (receivers accept either `v1,` signature). */
export async function rotateWebhookSecret(ctx: TenantContext, id: string) {
  const endpoint = await findEndpoint(ctx, id);
  const secret = newSecret();
  endpoint.previousSecretSealed = endpoint.secretSealed;
  endpoint.previousSecretExpiresAt = new Date(Date.now() + PREVIOUS_SECRET_TTL_MS);
  endpoint.secretSealed = ctx.services.secretBox.encrypt(secret, sealContext(endpoint.id));
  endpoint.updatedAt = new Date();
  await ctx.em.flush();
  return { ...toEndpointRecord(endpoint), secret };
}

/** A `webhook.test` event, delivered to this endpoint only (the fan-out trigger skips this kind). */
export async function testWebhook(ctx: TenantContext, id: string) {
  const endpoint = await findEndpoint(ctx, id);
  const eventId = recordEvent(ctx.em, endpoint.application, 'webhook.test', {
    endpoint_id: endpoint.id,
    message: 'A test event sent from Gatehouse',
  });
  const delivery = ctx.em.create(WebhookDeliveryEntity, {
    id: newId(),
    application: endpoint.application,
    endpoint: endpoint.id,
    event: eventId,
    eventType: 'webhook.test',
    status: 'pending',
    attempts: 0,
    responseStatus: null,
    lastAttemptAt: null,
    nextAttemptAt: new Date(),
    lockedUntil: null,
    lastError: null,
  });
  await ctx.em.flush();
  settingsOf(ctx.services).nudge?.();
  return toDeliveryRecord(delivery);
}

export async function listDeliveries(ctx: TenantContext, input: PageQuery & { id: string; status?: string }) {
  const endpoint = await findEndpoint(ctx, input.id);
  const [rows, total] = await ctx.em.findAndCount(
    WebhookDeliveryEntity,
    { endpoint: endpoint.id, ...(input.status ? { status: input.status } : {}) },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: input.limit, offset: input.offset },
  );
  return { deliveries: rows.map(toDeliveryRecord), total, limit: input.limit, offset: input.offset };
}

async function findDelivery(ctx: TenantContext, input: { id: string; delivery_id: string }) {
  const endpoint = await findEndpoint(ctx, input.id);
  const delivery = await ctx.em.findOne(WebhookDeliveryEntity, { id: input.delivery_id, endpoint: endpoint.id });
  if (!delivery) throw notFound('Webhook delivery');
  return delivery;
}

export async function getDelivery(ctx: TenantContext, input: { id: string; delivery_id: string }) {
  const delivery = await findDelivery(ctx, input);
  const attempts = await ctx.em.execute<
    Array<{
      attempted_at: Date;
      response_status: number | null;
      duration_ms: number;
      response_excerpt: string | null;
      error: string | null;
    }>
  >(
    `select attempted_at, response_status, duration_ms, response_excerpt, error
       from webhook_attempts where delivery_id = ? order by attempted_at, id`,
    [delivery.id],
  );
  return {
    ...toDeliveryRecord(delivery),
    attempt_log: attempts.map((a) => ({
      attempted_at: new Date(a.attempted_at).toISOString(),
      response_status: a.response_status,
      duration_ms: a.duration_ms,
      response_excerpt: a.response_excerpt,
      error: a.error,
    })),
  };
}

/**
 * Sends a delivery again now (one more attempt; a delivery that has used its schedule gets no automatic retry after
 * it). A delivery of a disabled endpoint waits until the endpoint is enabled again.
 */
export async function retryDelivery(ctx: TenantContext, input: { id: string; delivery_id: string }) {
  const delivery = await findDelivery(ctx, input);
  const endpoint = await findEndpoint(ctx, input.id);
  delivery.status = 'pending';
  delivery.nextAttemptAt = endpoint.status === 'active' ? new Date() : null;
  delivery.lockedUntil = null;
  await ctx.em.flush();
  settingsOf(ctx.services).nudge?.();
  return toDeliveryRecord(delivery);
}

/** Svix's "recover": every failed delivery of this endpoint created since `since` is queued again (one attempt each). */
export async function recoverDeliveries(ctx: TenantContext, input: { id: string; since: string }) {
  const endpoint = await findEndpoint(ctx, input.id);
  const since = new Date(input.since);
  if (Number.isNaN(since.getTime())) throw new AppError('validation_failed', 'since is not a valid time');
  const recovered = await ctx.em.nativeUpdate(
    WebhookDeliveryEntity,
    { endpoint: endpoint.id, status: 'failed', createdAt: { $gte: since } },
    { status: 'pending', nextAttemptAt: endpoint.status === 'active' ? new Date() : null, lockedUntil: null },
  );
  settingsOf(ctx.services).nudge?.();
  return { recovered };
}

/** Disables an endpoint from the worker (410, or 5 days of failures) and records `webhook_endpoint.disabled`. */
export async function disableEndpoint(em: EntityManager, endpointId: string, reason: 'gone' | 'failing'): Promise<boolean> {
  return em.transactional(async (tx) => {
    // Disabled first: the event's fan-out then no longer reaches this endpoint.
    const [row] = await tx.execute<Array<{ id: string; application_id: string; url: string; event_types: string[] }>>(
      `update webhook_endpoints set status = 'disabled', disabled_reason = ?, updated_at = now()
        where id = ? and status = 'active' returning id, application_id, url, event_types`,
      [reason, endpointId],
    );
    if (!row) return false;
    await parkDeliveries(tx, endpointId);
    recordEvent(tx, row.application_id, 'webhook_endpoint.disabled', {
      id: row.id,
      url: row.url,
      event_types: row.event_types,
      status: 'disabled',
      reason,
    });
    return true;
  });
}
