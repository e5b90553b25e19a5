import { z } from 'zod';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';

/** Event kinds of CONTRACT §6 that this build emits; later capabilities add theirs. */
export const EVENT_TYPES = [
  'user.created',
  'user.updated',
  'user.deleted',
  'user.merged',
  'user.identity_linked',
  'user.identity_unlinked',
  'organization.created',
  'organization.updated',
  'organization.deleted',
  'organization_membership.created',
  'organization_membership.updated',
  'organization_membership.deleted',
  'api_key.created',
  'api_key.revoked',
  'session.created',
  'session.revoked',
  'session.stepped_up',
  'message.created',
  'passkey.counter_regression',
  'saml_connection.created',
  'saml_connection.updated',
  'saml_connection.deleted',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.disabled',
  'webhook.test',
  'custom_domain.added',
  'custom_domain.verified',
  'subscription.created',
  'subscription.updated',
  'subscription.canceled',
  'access.denied',
  'oauth2_grant.created',
  'oauth2_grant.revoked',
  'organization_invitation.created',
  'organization_invitation.accepted',
  'organization_invitation.revoked',
  'organization_domain.created',
  'organization_domain.verified',
  'organization_domain.updated',
  'organization_domain.deleted',
  'organization_domain.join_skipped',
  'directory.created',
  'directory.updated',
  'directory.token_rotated',
  'directory.deleted',
  'directory_user.created',
  'directory_user.updated',
  'directory_user.deactivated',
  'directory_user.reactivated',
  'directory_user.deleted',
  'directory_group.created',
  'directory_group.updated',
  'directory_group.deleted',
  'directory_group.user_added',
  'directory_group.user_removed',
  'operator.created',
  'operator.updated',
  'operator.deleted',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/**
 * The `data` of each event kind, as the schema in the `events` of the emitting module's declaration gives it: that
 * module adds its kinds here (`declare module '…/events.schema.ts' { interface EventPayloads extends
 * EventPayloadsOf<typeof events> {} }`), so `recordEvent` takes only what a kind declares without importing upwards,
 * and a kind left undeclared (or declared twice, differently) does not type-check.
 */
// biome-ignore lint/suspicious/noEmptyInterface: the modules that emit events fill it (declaration merging)
export interface EventPayloads {}

/**
 * On the wire any kind's `data` is an object; its type is the kind's declared payload, since every event is written
 * through `recordEvent` or `eventRow`, which take only that (the router's type, so the SDK's, says so).
 */
export const EventSchema = z
  .object({ id: z.uuid(), type: text(), data: z.record(text(), z.unknown()), created_at: z.iso.datetime() })
  // Spelled out here, not named: the SDK's published types inline the router's, which then carry no server type.
  .meta({ id: 'Event' }) as unknown as z.ZodType<
  { [K in EventType]: { id: string; type: K; data: EventPayloads[K]; created_at: string } }[EventType]
>;
/** An event of the log, one member per kind, with its kind's `data`. */
export type EventRecord = z.output<typeof EventSchema>;

export const ListEventsInputSchema = listQuerySchema({ type: z.enum(EVENT_TYPES).optional() });
export const EventPageSchema = pageOf('events', EventSchema).meta({ id: 'EventPage' });
