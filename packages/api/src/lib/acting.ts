import { AsyncLocalStorage } from 'node:async_hooks';

/** Who made a change, as the audit log names them (CONTRACT §3 "audit log actor type"). */
export const ACTOR_TYPES = ['user', 'api_key', 'operator', 'directory', 'portal', 'system'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];

/** An actor: its kind and its id (the user's, the key's, the directory's, the portal session's…). */
export interface Actor {
  type: ActorType;
  id: string;
}

/** The actor of work nobody authenticated for: background jobs, and requests before anyone signed in. */
export const SYSTEM_ACTOR: Actor = { type: 'system', id: 'gatehouse' };

/** Where a request came from, as the audit log records it. */
export interface RequestOrigin {
  ip: string | null;
  userAgent: string | null;
}

/** The acting scope: who acts, and from where (null outside a request). */
export interface ActingScope extends RequestOrigin {
  actor: Actor;
}

const USER_AGENT_MAX = 512;
const IP_MAX = 64;

const storage = new AsyncLocalStorage<ActingScope>();

const origin = (from: Partial<RequestOrigin> | undefined, parent: ActingScope | undefined): RequestOrigin => ({
  ip: (from?.ip ?? parent?.ip ?? null)?.slice(0, IP_MAX) ?? null,
  userAgent: (from?.userAgent ?? parent?.userAgent ?? null)?.slice(0, USER_AGENT_MAX) ?? null,
});

/**
 * Runs `fn` as `actor`: every event written inside it (through `recordEvent` or `eventRow`, synchronously or after
 * any number of awaits) carries the actor and the request's address and user agent. A route that authenticates its
 * caller outside the procedure builders (SCIM requests: `directory`; the admin portal: `portal`) wraps its work in it;
 * `from` gives the request's origin (inherited from an enclosing scope when absent).
 */
export function withActor<T>(actor: Actor, fn: () => T, from?: Partial<RequestOrigin>): T {
  const parent = storage.getStore();
  return storage.run({ actor: { type: actor.type, id: actor.id }, ...origin(from, parent) }, fn);
}

/**
 * The scope of one procedure call, opened before its caller is authenticated: the system acts until the
 * authenticator names the caller (`actAs`).
 */
export const withRequest = <T>(from: Partial<RequestOrigin>, fn: () => T): T => withActor(SYSTEM_ACTOR, fn, from);

/**
 * Names the caller of the current scope, once its credential has been checked (an authenticator calls it). Outside a
 * scope it does nothing: an authenticator may run where no request is (a test, a script).
 */
export function actAs(actor: Actor): void {
  const scope = storage.getStore();
  if (scope) scope.actor = { type: actor.type, id: actor.id };
}

/** The current scope: the system with no origin outside any request. */
export const actingScope = (): ActingScope => storage.getStore() ?? { actor: SYSTEM_ACTOR, ip: null, userAgent: null };
