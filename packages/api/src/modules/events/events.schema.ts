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
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export const EventSchema = z
  .object({ id: z.uuid(), type: text(), data: z.record(text(), z.unknown()), created_at: z.iso.datetime() })
  .meta({ id: 'Event' });

export const ListEventsInputSchema = listQuerySchema({ type: z.enum(EVENT_TYPES).optional() });
export const EventPageSchema = pageOf('events', EventSchema).meta({ id: 'EventPage' });
