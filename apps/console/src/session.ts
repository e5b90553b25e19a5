import { useSyncExternalStore } from 'react';

/**
 * The operator's console session, as `POST /console/session` answers it. The server keeps the sign-in in its own
 * cookie; the page holds only the short-lived access token, in memory (never in storage a script could read later),
 * and asks for a fresh one shortly before it expires.
 */
export type Role = 'owner' | 'admin' | 'support' | 'viewer';

export interface ConsoleApplication {
  id: string;
  name: string;
  environment: 'development' | 'production';
  role: Role;
}

export interface ConsoleSession {
  access_token: string;
  expires_at: string;
  aal: 1 | 2;
  operator: { id: string; email: string; roles: Array<{ application_id: string | null; role: Role }> };
  applications: ConsoleApplication[];
}

/** A failed handshake that is not "signed out": shown with the server's message and request id. */
export class SessionError extends Error {
  readonly status: number;
  readonly code: string | null;
  readonly requestId: string | null;

  constructor(message: string, status: number, code: string | null, requestId: string | null) {
    super(message);
    this.name = 'SessionError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

const BASE = '/console';
/** Ask for a new token this long before the current one expires. */
const REFRESH_EARLY_MS = 60_000;

let current: ConsoleSession | null = null;
let inflight: Promise<ConsoleSession> | null = null;
let timer: ReturnType<typeof setTimeout> | undefined;
const listeners = new Set<() => void>();

const notify = () => {
  for (const listener of listeners) listener();
};

/** Where the page is now, as the `return` of a sign-in: the path and search only (the server checks it too). */
const here = () => `${location.pathname}${location.search}`;

/** The server's sign-in page for the console, coming back to this page afterwards; `aal2` asks for the second factor. */
export function signInUrl(options: { aal2?: boolean; returnTo?: string } = {}): string {
  const query = new URLSearchParams();
  if (options.aal2) query.set('aal', '2');
  query.set('return', options.returnTo ?? here());
  return `${BASE}/sign-in?${query}`;
}

/** Leaves the page for the sign-in (a full navigation: the server runs it on Gatehouse's hosted pages). */
export function goToSignIn(options: { aal2?: boolean } = {}): void {
  location.assign(signInUrl(options));
}

async function requestSession(): Promise<ConsoleSession> {
  const response = await fetch(`${BASE}/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: '{}',
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const requestId = response.headers.get('x-request-id');
  const body = (await response.json().catch(() => null)) as {
    data?: ConsoleSession;
    error?: { code?: string; message?: string };
  } | null;
  if (response.status === 401) {
    goToSignIn();
    // The page is leaving: never settle, so nothing renders a signed-out state meanwhile.
    return new Promise<never>(() => {});
  }
  if (!response.ok || !body?.data) {
    throw new SessionError(
      body?.error?.message ?? `The console could not open your session (HTTP ${response.status}).`,
      response.status,
      body?.error?.code ?? null,
      requestId,
    );
  }
  return body.data;
}

function schedule(session: ConsoleSession): void {
  clearTimeout(timer);
  const delay = Math.max(5_000, Date.parse(session.expires_at) - Date.now() - REFRESH_EARLY_MS);
  timer = setTimeout(() => {
    refreshSession().catch(() => {
      // Shown by the next call that needs the token; the page itself stays as it is.
    });
  }, delay);
}

/** Asks the server for the session again (a fresh token, and the applications as they are now); one request at a time. */
export function refreshSession(): Promise<ConsoleSession> {
  inflight ??= requestSession()
    .then((session) => {
      current = session;
      schedule(session);
      notify();
      return session;
    })
    .finally(() => {
      inflight = null;
    });
  return inflight;
}

/** The token for the next call (the session is loaded before any page renders). */
export function accessToken(): string | null {
  return current?.access_token ?? null;
}

export function currentSession(): ConsoleSession | null {
  return current;
}

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

/** The session in a component; re-renders when it is refreshed. */
export function useSession(): ConsoleSession | null {
  return useSyncExternalStore(subscribe, () => current);
}

/** Ends the console session on the server, then shows the sign-in page. */
export async function signOut(): Promise<void> {
  clearTimeout(timer);
  await fetch(`${BASE}/sign-out`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{}',
    credentials: 'same-origin',
  }).catch(() => undefined);
  current = null;
  location.assign(`${BASE}/sign-in`);
}
