import type { RestResponse, TestApp, TestServer } from './server.ts';
import { linkIn, type ReceivedMail, type startSmtpSink } from './smtp.ts';

/** The SMTP sink of `startSmtpSink()`. */
export type SmtpSink = Awaited<ReturnType<typeof startSmtpSink>>;

/** Tokens of CONTRACT §2 / seed "Tokens". */
export interface Tokens {
  access_token: string;
  refresh_token: string;
  token_type: 'Bearer';
  expires_in: number;
  aal: number;
  session_id: string;
}

export interface UserRecord {
  id: string;
  primary_email: string | null;
  email_verified: boolean;
  status: string;
  profile: Record<string, unknown>;
  merged_into: string | null;
  created_at: string;
  updated_at: string;
}

/** The sign-in result of CONTRACT §4 (a discriminated union on `status`). */
export type SignInResult =
  | {
      status: 'consent_required';
      pending_token: string;
      consent_documents: Array<{ doc_type: string; url: string; version: string }>;
    }
  | { status: 'mfa_required'; pending_token: string; mfa: { methods: string[]; pending_token: string } }
  | { status: 'complete'; tokens: Tokens; user: UserRecord };

/**
 * An end-user REST call: the publishable application id only (the secret key of `app.rest` is dropped), plus an
 * optional access token and extra headers.
 */
export const endUser = <T = any>(
  app: TestApp,
  method: string,
  path: string,
  body?: unknown,
  token?: string,
  headers: Record<string, string | undefined> = {},
): Promise<RestResponse<T>> =>
  app.rest<T>(method, path, body, { authorization: token ? `Bearer ${token}` : undefined, ...headers });

function expectOk(res: RestResponse, step: string) {
  if (res.status !== 200) throw new Error(`${step} answered ${res.status}: ${JSON.stringify(res.body)}`);
}

export interface MagicLinkMail {
  /** The answer of `POST /v1/auth/magic-link/start`. */
  started: RestResponse<{ verification_id: string }>;
  mail: ReceivedMail;
  link: URL;
  /** The `token` query parameter of the mailed link. */
  token: string;
}

/** `POST /v1/auth/magic-link/start`, then the mail it sends (through the SMTP sink) and the token of its link. */
export async function requestMagicLink(
  smtp: SmtpSink,
  app: TestApp,
  email: string,
  options: { redirectUrl?: string; hostId?: string; headers?: Record<string, string | undefined> } = {},
): Promise<MagicLinkMail> {
  const body = {
    email,
    ...(options.redirectUrl ? { redirect_url: options.redirectUrl } : {}),
    ...(options.hostId ? { host_id: options.hostId } : {}),
  };
  const started = await endUser(app, 'POST', '/v1/auth/magic-link/start', body, undefined, options.headers);
  expectOk(started, 'magic-link start');
  const mail = await smtp.next(email);
  const link = linkIn(mail);
  const token = link.searchParams.get('token');
  if (!token) throw new Error(`no token in the mailed link ${link}`);
  return { started, mail, link, token };
}

export interface SignInOptions {
  /** When the result is `consent_required`, accept every listed document and continue (default true). */
  acceptConsent?: boolean;
  /** Extra headers on every end-user call (e.g. `user-agent`, `origin`). */
  headers?: Record<string, string | undefined>;
  redirectUrl?: string;
  /** The host signed in to (host access rules decide; the access token carries it as `host`). */
  hostId?: string;
}

export interface SignInAttempt extends MagicLinkMail {
  /** The answer of `POST /v1/auth/magic-link/verify`. */
  verified: RestResponse<SignInResult>;
  /** The last sign-in result: after consent acceptance when that ran, else the verify result. */
  result: SignInResult;
}

/**
 * Magic link start → mail → verify (→ consent accept, when asked and required). Answers the last sign-in result
 * whatever its status (`mfa_required` included); throws if any step is not 200.
 */
export async function beginSignIn(
  _server: TestServer,
  smtp: SmtpSink,
  app: TestApp,
  email: string,
  options: SignInOptions = {},
): Promise<SignInAttempt> {
  const mail = await requestMagicLink(smtp, app, email, {
    redirectUrl: options.redirectUrl,
    hostId: options.hostId,
    headers: options.headers,
  });
  const verified = await endUser<SignInResult>(
    app,
    'POST',
    '/v1/auth/magic-link/verify',
    { token: mail.token },
    undefined,
    options.headers,
  );
  expectOk(verified, 'magic-link verify');
  let result = verified.body.data;
  if (result.status === 'consent_required' && (options.acceptConsent ?? true)) {
    const accepted = await endUser<SignInResult>(
      app,
      'POST',
      '/v1/auth/consent/accept',
      { pending_token: result.pending_token, doc_types: result.consent_documents.map((d) => d.doc_type) },
      undefined,
      options.headers,
    );
    expectOk(accepted, 'consent accept');
    result = accepted.body.data;
  }
  return { ...mail, verified, result };
}

export interface SignedIn extends SignInAttempt {
  tokens: Tokens;
  user: UserRecord;
}

/**
 * A complete magic-link sign-in (consent auto-accepted unless `acceptConsent: false`): answers the tokens and the
 * user. Throws when the sign-in does not end `complete` (use `beginSignIn` to inspect other outcomes).
 */
export async function signIn(
  server: TestServer,
  smtp: SmtpSink,
  app: TestApp,
  email: string,
  options: SignInOptions = {},
): Promise<SignedIn> {
  const attempt = await beginSignIn(server, smtp, app, email, options);
  if (attempt.result.status !== 'complete') {
    throw new Error(`sign-in of ${email} ended ${attempt.result.status}, not complete: ${JSON.stringify(attempt.result)}`);
  }
  return { ...attempt, tokens: attempt.result.tokens, user: attempt.result.user };
}
