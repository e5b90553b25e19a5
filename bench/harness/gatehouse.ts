/**
 * The real server as the suites use it: started on a scratch database (or a PGlite directory) with fresh secrets, an
 * application created through the operator API, JSON calls, and users signed in by magic link as people would.
 */
import { randomBytes } from 'node:crypto';
import { sleep, tempDir } from './env.ts';
import { secrets, startServer } from './processes.ts';

export interface Application {
  id: string;
  secretKey: string;
  /** Headers of a backend call with the secret key. */
  sk: Record<string, string>;
}

/** One JSON request; the answer's `data` when its status is `expect` (it throws otherwise). */
export async function api(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
  expect = 200,
) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await response.text();
  if (response.status !== expect) throw new Error(`${method} ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text).data;
}

/**
 * The real server with an application. `database`: a scratch database's URL, or `{ pgliteDir }`. `settings` and
 * `fields` go into `POST /v1/applications` (each settings key named replaces its default).
 */
export async function startGatehouse(
  label: string,
  database: string | { pgliteDir: string },
  options: { settings?: Record<string, unknown>; fields?: Record<string, unknown>; env?: Record<string, string> } = {},
) {
  const env: Record<string, string> = {
    ...(typeof database === 'string'
      ? { DATABASE_URL: database, GATEHOUSE_DATA_DIR: await tempDir('data') }
      : { GATEHOUSE_DATA_DIR: database.pgliteDir }),
    ...secrets(),
    ...options.env,
  };
  const server = await startServer(label, env);
  const created = await api(
    server.url,
    'POST',
    '/v1/applications',
    { authorization: `Bearer ${env.GATEHOUSE_OPERATOR_TOKEN}` },
    {
      name: 'Benchmark',
      ...options.fields,
      ...(options.settings ? { settings: options.settings } : {}),
    },
    201,
  );
  const id = created.application.id as string;
  const secretKey = created.secret_key.secret as string;
  const app: Application = { id, secretKey, sk: { authorization: `Bearer ${secretKey}`, 'x-application-id': id } };
  return { server, app, env };
}

/** Sign-in links for many addresses from one client address (every benchmark request comes from 127.0.0.1). */
export const MANY_SIGN_INS = { rate_limits: { magic_link_per_address: 100_000, magic_link_per_email: 10, window_s: 900 } };

/** The magic-link tokens in the message log (a development application without SMTP keeps the links there). */
export async function linkTokens(url: string, app: Application): Promise<Array<{ to: string; token: string }>> {
  const tokens: Array<{ to: string; token: string }> = [];
  for (let offset = 0; ; offset += 100) {
    const page = await api(url, 'GET', `/v1/messages?limit=100&offset=${offset}`, app.sk);
    for (const m of page.messages as Array<{ to: string; template_key: string; body: string }>) {
      const decoded = m.body
        .replace(/&#x([0-9a-f]+);/gi, (_m, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
        .replaceAll('&amp;', '&');
      const token = m.template_key === 'magic_link' ? /[?&]token=(ml_[0-9A-Za-z]+)/.exec(decoded)?.[1] : undefined;
      if (token) tokens.push({ to: m.to, token });
    }
    if (page.messages.length < 100) return tokens;
  }
}

/**
 * Signs the addresses in by magic link (start, the link from the message log, verify); returns each verify's `data`:
 * `complete` with tokens, or `mfa_required` for a user with a second factor.
 */
export async function magicLinkSignIns(url: string, app: Application, emails: string[]): Promise<any[]> {
  const before = new Set((await linkTokens(url, app)).map((l) => l.token));
  const es = { 'x-application-id': app.id };
  for (const email of emails) await api(url, 'POST', '/v1/auth/magic-link/start', es, { email });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const tokens = new Map((await linkTokens(url, app)).filter((l) => !before.has(l.token)).map((l) => [l.to, l.token]));
    const fresh = emails.map((e) => tokens.get(e)).filter((t) => t !== undefined);
    if (fresh.length === emails.length) {
      const answers: any[] = [];
      for (const token of fresh) {
        answers.push(await api(url, 'POST', '/v1/auth/magic-link/verify', es, { token }));
      }
      return answers;
    }
    if (Date.now() > deadline) throw new Error(`the message log holds ${fresh.length} of ${emails.length} new links after 60 s`);
    await sleep(200);
  }
}

export interface SignedIn {
  email: string;
  userId: string;
  sessionId: string;
  accessToken: string;
  refreshToken: string;
}

/** `count` new users signed in by magic link; each must complete with tokens. */
export async function signIn(url: string, app: Application, count: number, label = 'user'): Promise<SignedIn[]> {
  const tag = randomBytes(4).toString('hex');
  const emails = Array.from({ length: count }, (_, i) => `${label}-${tag}-${i}@bench.example.com`);
  return (await magicLinkSignIns(url, app, emails)).map((data, i) => {
    if (data.status !== 'complete') throw new Error(`magic-link verify answered ${JSON.stringify(data)}`);
    const t = data.tokens;
    return {
      email: emails[i]!,
      userId: data.user.id,
      sessionId: t.session_id,
      accessToken: t.access_token,
      refreshToken: t.refresh_token,
    };
  });
}
