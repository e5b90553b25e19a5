import { type Actor, actingScope } from '../../lib/acting.ts';
import type { EventPayloads, EventType } from './events.schema.ts';

/** What an audit log entry's change was made to. */
export interface AuditTarget {
  type: string;
  id: string;
}

/** What an event's `data` says for its audit log entry. */
export interface AuditFacts {
  organizationId: string | null;
  target: AuditTarget | null;
  /**
   * Who acted when the request named no caller (`system`): a sign-in has no authenticated caller, but the user who
   * signed in acted. An authenticated caller (a key, the operator, a signed-in user, a directory) always wins.
   */
  actor?: Actor;
}

type Derive<K extends EventType> = (data: EventPayloads[K]) => AuditFacts;

/** The kinds whose payload has a string `id`: the default mapping fits them (see `defaultFacts`). */
type KindsWithId = { [K in EventType]: EventPayloads[K] extends { id: string } ? K : never }[EventType];

/**
 * The audit mapping of every event kind: how its `data` names the organization and the target. A kind whose payload
 * has a string `id` may leave it out (the default: the target is `{type: <the kind's resource>, id: data.id}`, the
 * organization `data.organization_id` when the payload has one); every other kind must declare one, or this file does
 * not type-check. `null`: the kind is no audit log entry (its data is delivery material, not a change: the message
 * log's mail, with its one-time links).
 */
export type AuditMapping = { [K in Exclude<EventType, KindsWithId>]: Derive<K> | null } & {
  [K in KindsWithId]?: Derive<K> | null;
};

const user = (id: string): AuditTarget => ({ type: 'user', id });
const asUser = (id: string): Actor => ({ type: 'user', id });
const organization = (data: { id: string }): AuditFacts => ({
  organizationId: data.id,
  target: { type: 'organization', id: data.id },
});
const membership = (data: { organization_id: string; user_id: string }): AuditFacts => ({
  organizationId: data.organization_id,
  target: user(data.user_id),
});

export const AUDIT_MAPPING: AuditMapping = {
  'user.created': (d) => ({ organizationId: null, target: user(d.id), actor: asUser(d.id) }),
  'user.merged': (d) => ({ organizationId: null, target: user(d.target_user_id) }),
  'user.identity_linked': (d) => ({ organizationId: null, target: user(d.user_id), actor: asUser(d.user_id) }),
  'user.identity_unlinked': (d) => ({ organizationId: null, target: user(d.user_id) }),
  'organization.created': organization,
  'organization.updated': organization,
  'organization.deleted': organization,
  'organization_membership.created': membership,
  'organization_membership.updated': membership,
  'organization_membership.deleted': membership,
  'session.created': (d) => ({ organizationId: null, target: { type: 'session', id: d.id }, actor: asUser(d.user_id) }),
  'session.stepped_up': (d) => ({ organizationId: null, target: { type: 'session', id: d.id }, actor: asUser(d.user_id) }),
  'message.created': null,
  'passkey.counter_regression': (d) => ({ organizationId: null, target: { type: 'passkey', id: d.passkey_id } }),
  'webhook.test': (d) => ({ organizationId: null, target: { type: 'webhook_endpoint', id: d.endpoint_id } }),
  'access.denied': (d) => ({ organizationId: null, target: user(d.user_id), actor: asUser(d.user_id) }),
  'organization_domain.join_skipped': (d) => ({
    organizationId: d.organization_id,
    target: user(d.user_id),
    actor: asUser(d.user_id),
  }),
  'directory_group.user_added': (d) => ({ organizationId: d.organization_id, target: user(d.user_id) }),
  'directory_group.user_removed': (d) => ({ organizationId: d.organization_id, target: user(d.user_id) }),
  'oauth2_grant.created': (d) => ({
    organizationId: null,
    target: { type: 'oauth2_grant', id: d.id },
    actor: asUser(d.user_id),
  }),
};

/** The event kinds that are no audit log entry. */
export const NOT_AUDITED: readonly string[] = Object.entries(AUDIT_MAPPING).flatMap(([kind, derive]) =>
  derive === null ? [kind] : [],
);

function defaultFacts(type: string, data: Record<string, unknown>): AuditFacts {
  const id = typeof data.id === 'string' ? data.id : null;
  return {
    organizationId: typeof data.organization_id === 'string' ? data.organization_id : null,
    target: id === null ? null : { type: type.slice(0, type.lastIndexOf('.')), id },
  };
}

/** An event's audit columns, in the order of `AUDIT_COLUMNS`. */
export type AuditValues = readonly [
  actorType: string,
  actorId: string,
  ip: string | null,
  userAgent: string | null,
  organizationId: string | null,
  targetType: string | null,
  targetId: string | null,
];

/** The audit columns of the `events` table, in the order of `AuditValues`. */
export const AUDIT_COLUMNS = 'actor_type, actor_id, ip, user_agent, organization_id, target_type, target_id';

/**
 * The audit columns of an event of kind `type` written now: the acting scope's actor, address and user agent
 * (`lib/acting.ts`), and what the kind's mapping reads from its `data`. No query: they ride in the event's insert.
 */
export function auditValues<T extends EventType>(type: T, data: EventPayloads[T]): AuditValues {
  const scope = actingScope();
  // The mapping's entry for `type` takes that kind's payload: indexing the union of entries loses the pairing.
  const derive = AUDIT_MAPPING[type] as Derive<T> | null | undefined;
  const facts =
    derive === null
      ? { organizationId: null, target: null }
      : // every payload is an object (EventSchema: a record), which the default reads field by field.
        (derive?.(data) ?? defaultFacts(type, data as Record<string, unknown>));
  const actor = scope.actor.type === 'system' && facts.actor ? facts.actor : scope.actor;
  return [
    actor.type,
    actor.id,
    scope.ip,
    scope.userAgent,
    facts.organizationId,
    facts.target?.type ?? null,
    facts.target?.id ?? null,
  ];
}
