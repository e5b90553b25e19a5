/**
 * hosted: the hosted sign-in page (its HTML under load, in server CPU per request; the weight of its script and style)
 * and a returning person's authorization code flow through the application's OpenID provider — authorize with the
 * browser's cookies (the hosted session's and the provider's), the code, its exchange with PKCE — beside a bare
 * oidc-provider with its in-memory adapter doing the same flow (bench/minimal/oidc-provider.ts), in the same run.
 */
import { createHash, randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { config, sleep } from '../harness/env.ts';
import { type Application, api, linkTokens, MANY_SIGN_INS, startGatehouse } from '../harness/gatehouse.ts';
import { type ConnectionState, load, own, type Scenario } from '../harness/load.ts';
import { scratchDatabase } from '../harness/postgres.ts';
import { startServer } from '../harness/processes.ts';
import { cpuMs, num, ratioTarget, type SuiteResult, type Target } from '../harness/report.ts';

const CALLBACK = 'https://partner.bench.example/callback';
const SCOPE = 'openid email';
/** The sign-in page's budgets: server CPU per answer, its script and style gzipped. */
const PAGE_CPU_MS = 5;
const PAGE_ASSETS_BYTES = 50_000;

interface Client {
  id: string;
  secret: string;
}

const basic = (client: Client) => `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;

/** A browser over fetch: a cookie jar (by name), redirects followed by hand, every URL sent to the server under test. */
class Browser {
  readonly cookies = new Map<string, string>();
  readonly url: string;
  constructor(url: string) {
    this.url = url;
  }

  async request(target: string, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}) {
    const response = await fetch(
      target.startsWith('/') ? `${this.url}${target}` : target.replace(/^https?:\/\/[^/]+/, this.url),
      {
        method: init.method ?? (init.form ? 'POST' : 'GET'),
        redirect: 'manual',
        headers: {
          ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
          ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
          ...init.headers,
        },
        body: init.form ? new URLSearchParams(init.form).toString() : undefined,
        signal: AbortSignal.timeout(30_000),
      },
    );
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const [name, value] = [pair.slice(0, at).trim(), pair.slice(at + 1).trim()];
      if (!value || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: response.status, location: response.headers.get('location') ?? '', html: await response.text() };
  }

  /** The cookie header a returning browser sends to the authorization endpoint: the sessions', nothing else. */
  sessionCookies(): string {
    return [...this.cookies]
      .filter(([name]) => name.startsWith('gh_session_') || name.startsWith('_session'))
      .map(([k, v]) => `${k}=${v}`)
      .join('; ');
  }
}

/** The hidden fields of the form posting to `action`. */
function hiddenFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form posting to ${action}:\n${html.slice(0, 2000)}`);
  const form = html.slice(start, html.indexOf('</form>', start));
  const decode = (v: string) => v.replaceAll('&quot;', '"').replaceAll('&#39;', "'").replaceAll('&amp;', '&');
  return Object.fromEntries(
    [...form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, decode(m[2]!)]),
  );
}

/** People signed in on the hosted pages by magic link (the form, the mail, the link's button), one browser each. */
export async function hostedSignIns(url: string, app: Application, count: number): Promise<Browser[]> {
  const tag = randomBytes(4).toString('hex');
  const base = `/a/${app.id}`;
  const before = new Set((await linkTokens(url, app)).map((l) => l.token));
  const people = Array.from({ length: count }, (_, i) => ({
    email: `hosted-${tag}-${i}@bench.example.com`,
    browser: new Browser(url),
  }));
  for (const { email, browser } of people) {
    const form = await browser.request(`${base}/sign-in`);
    const started = await browser.request(`${base}/sign-in`, { form: { ...hiddenFields(form.html, `${base}/sign-in`), email } });
    if (started.status !== 303) throw new Error(`the sign-in form answered ${started.status}: ${started.html.slice(0, 500)}`);
  }
  const deadline = Date.now() + 60_000;
  let links = new Map<string, string>();
  while (links.size < count) {
    if (Date.now() > deadline) throw new Error(`the message log holds ${links.size} of ${count} hosted sign-in links after 60 s`);
    await sleep(200);
    links = new Map((await linkTokens(url, app)).filter((l) => !before.has(l.token)).map((l) => [l.to, l.token]));
  }
  for (const { email, browser } of people) {
    const landing = await browser.request(`${base}/magic-link?token=${links.get(email)}`);
    const done = await browser.request(`${base}/magic-link`, { form: hiddenFields(landing.html, `${base}/magic-link`) });
    if (done.status !== 303 || ![...browser.cookies.keys()].some((n) => n.startsWith('gh_session_')))
      throw new Error(`the hosted sign-in did not complete (${done.status}): ${done.html.slice(0, 500)}`);
  }
  return people.map((p) => p.browser);
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

const authorizeQuery = (client: Client, challenge: string, extra: Record<string, string> = {}) =>
  new URLSearchParams({
    client_id: client.id,
    redirect_uri: CALLBACK,
    response_type: 'code',
    scope: SCOPE,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state: randomBytes(8).toString('hex'),
    ...extra,
  });

/** The code a redirect to the client's callback carries (the run fails on anything else: it would measure another flow). */
function codeOf(location: string): string {
  const target = new URL(location, 'http://unused.invalid');
  const code = target.href.startsWith(CALLBACK) ? target.searchParams.get('code') : null;
  if (!code) throw new Error(`the authorization request did not answer a code: ${location}`);
  return code;
}

async function exchange(url: string, issuerPath: string, client: Client, code: string, verifier: string) {
  const response = await fetch(`${url}${issuerPath}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier }),
  });
  const tokens = (await response.json()) as { id_token?: string };
  if (!tokens.id_token) throw new Error(`no ID token: ${JSON.stringify(tokens)}`);
}

/**
 * The first authorization of each person on Gatehouse, as their browser runs it: the provider opens its session from
 * the hosted one and asks for consent on the sign-in page; Allow; the code; its exchange. Answers each browser's
 * cookie header afterwards (a returning browser).
 */
export async function firstAuthorizations(url: string, app: Application, client: Client, browsers: Browser[]): Promise<string[]> {
  const issuerPath = `/oauth2/${app.id}`;
  for (const browser of browsers) {
    const { verifier, challenge } = pkce();
    let at = await browser.request(`${issuerPath}/auth?${authorizeQuery(client, challenge)}`);
    for (let hops = 0; at.location && !at.location.startsWith(CALLBACK); hops++) {
      if (hops > 8) throw new Error('too many redirects');
      at = await browser.request(at.location);
      const action = `/a/${app.id}/sign-in/authorize`;
      if (at.status === 200 && at.html.includes(`action="${action}"`)) {
        const scopes = Object.fromEntries([...at.html.matchAll(/name="(scope:[^"]+)"/g)].map((m) => [m[1]!, 'on']));
        at = await browser.request(action, { form: { ...hiddenFields(at.html, action), decision: 'allow', ...scopes } });
      }
    }
    await exchange(url, issuerPath, client, codeOf(at.location), verifier);
  }
  return browsers.map((b) => b.sessionCookies());
}

/** The minimal provider's first sign-in of each person (its interaction route logs in `login_hint` and grants). */
async function minimalFirstAuthorizations(url: string, client: Client, count: number): Promise<string[]> {
  const cookies: string[] = [];
  for (let i = 0; i < count; i++) {
    const browser = new Browser(url);
    const { verifier, challenge } = pkce();
    let at = await browser.request(`/auth?${authorizeQuery(client, challenge, { login_hint: `user-${i}` })}`);
    for (let hops = 0; at.location && !at.location.startsWith(CALLBACK); hops++) {
      if (hops > 8) throw new Error(`too many redirects (${at.status} ${at.html.slice(0, 300)})`);
      at = await browser.request(at.location);
    }
    await exchange(url, '', client, codeOf(at.location), verifier);
    cookies.push(browser.sessionCookies());
  }
  return cookies;
}

/**
 * A returning person's code flow, two requests per round: `GET {issuer}/auth` with the browser's cookies (303 to the
 * callback with a code: any other answer fails the run), then `POST {issuer}/token` (authorization_code, the PKCE
 * verifier, client_secret_basic; 200 with the tokens). Connection i is browser i.
 */
export function codeFlow(issuerPath: string, client: Client, browsers: string[]): Scenario {
  let next = 0;
  return {
    method: 'GET',
    path: `${issuerPath}/auth`,
    headers: {},
    expect: [303, 200],
    request: (
      state: ConnectionState,
    ): { method: 'GET' | 'POST'; path: string; headers: Record<string, string>; body?: string } => {
      const cookie = own(state, 'cookie', () => browsers[next++ % browsers.length]!);
      if (typeof state.code === 'string') {
        const body = new URLSearchParams({
          grant_type: 'authorization_code',
          code: state.code,
          redirect_uri: CALLBACK,
          code_verifier: String(state.verifier),
        }).toString();
        state.code = undefined;
        return {
          method: 'POST',
          path: `${issuerPath}/token`,
          headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(client) },
          body,
        };
      }
      const { verifier, challenge } = pkce();
      state.verifier = verifier;
      return { method: 'GET', path: `${issuerPath}/auth?${authorizeQuery(client, challenge)}`, headers: { cookie } };
    },
    response: (state: ConnectionState, status: number, body: string, headers: Record<string, string>) => {
      if (status === 303) state.code = codeOf(headers.location ?? '');
      else if (status === 200 && !body.includes('"id_token"'))
        throw new Error(`the token exchange answered ${body.slice(0, 300)}`);
    },
  };
}

/** Flows counted one at a time for the PostgreSQL transactions of one (`transactionsPerFlow`). */
const COUNTED_FLOWS = 100;

/**
 * PostgreSQL transactions per returning flow (every statement of the flow runs outside a transaction block, so this is
 * its statement count): the scratch database's committed and rolled-back transactions while COUNTED_FLOWS flows run
 * one at a time, less those of an idle window as long (the server's background tasks). Each window ends 11 s after
 * its work, once idle backends have flushed their counters (PostgreSQL 15 does within 10 s).
 */
async function transactionsPerFlow(
  db: Awaited<ReturnType<typeof scratchDatabase>>,
  url: string,
  issuerPath: string,
  client: Client,
  cookie: string,
): Promise<number> {
  const transactions = async () => {
    await sleep(11_000);
    const { rows } = await db.client.query<{ n: string }>(
      'select xact_commit + xact_rollback as n from pg_stat_database where datname = current_database()',
    );
    return Number(rows[0]?.n);
  };
  const before = await transactions();
  const started = Date.now();
  for (let i = 0; i < COUNTED_FLOWS; i++) {
    const { verifier, challenge } = pkce();
    const at = await new Browser(url).request(`${issuerPath}/auth?${authorizeQuery(client, challenge)}`, { headers: { cookie } });
    await exchange(url, issuerPath, client, codeOf(at.location), verifier);
  }
  const elapsed = Date.now() - started;
  const busy = await transactions();
  await sleep(elapsed);
  const idle = await transactions();
  return (busy - before - (idle - busy)) / COUNTED_FLOWS;
}

/** The sign-in page's script and style as a browser gets them: inline elements and linked files, each gzipped. */
async function pageAssets(url: string, path: string) {
  const html = await (await fetch(`${url}${path}`)).text();
  const parts: Array<{ kind: string; bytes: number; gzip: number }> = [];
  const add = (kind: string, text: string) => {
    if (text.trim()) parts.push({ kind, bytes: Buffer.byteLength(text), gzip: gzipSync(text, { level: 6 }).length });
  };
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    const src = /\bsrc="([^"]+)"/.exec(m[1]!)?.[1];
    add(src ? `script ${src}` : 'inline script', src ? await (await fetch(new URL(src, `${url}${path}`))).text() : m[2]!);
  }
  for (const m of html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style>/gi)) add('inline style', m[1]!);
  for (const m of html.matchAll(/<link\b[^>]*rel="stylesheet"[^>]*>/gi)) {
    const href = /\bhref="([^"]+)"/.exec(m[0])?.[1];
    if (href) add(`style ${href}`, await (await fetch(new URL(href, `${url}${path}`))).text());
  }
  return { html: { bytes: Buffer.byteLength(html), gzip: gzipSync(html).length }, parts };
}

export async function hostedSuite(): Promise<SuiteResult> {
  const db = await scratchDatabase();
  const { server, app } = await startGatehouse('Gatehouse', db.url, { settings: { ...MANY_SIGN_INS } });
  const created = await api(
    server.url,
    'POST',
    '/v1/oauth2/clients',
    app.sk,
    { name: 'Benchmark partner', type: 'confidential', redirect_uris: [CALLBACK], scopes: ['openid', 'email'] },
    201,
  );
  const client: Client = { id: created.id as string, secret: created.client_secret as string };
  // The hosted pages' own origin (the server's default base URL) allowed: the sign-in page offers passkeys, as it does
  // for an application whose pages are its relying party, with the WebAuthn script inline.
  await api(server.url, 'PATCH', `/v1/applications/${app.id}`, app.sk, {
    allowed_origins: [`http://localhost:${new URL(server.url).port}`],
  });
  const signInPath = `/a/${app.id}/sign-in`;
  const assets = await pageAssets(server.url, signInPath);
  if (!assets.parts.some((p) => p.kind.includes('script')))
    throw new Error('the sign-in page offers no passkey: no script measured');
  const page: Scenario = { method: 'GET', path: signInPath, headers: { accept: 'text/html' } };
  const gPage = await load(server, page, db);

  const browsers = await hostedSignIns(server.url, app, config.connections + 1);
  const cookies = await firstAuthorizations(server.url, app, client, browsers);
  const gFlow = await load(server, codeFlow(`/oauth2/${app.id}`, client, cookies), db);
  const perFlow = await transactionsPerFlow(db, server.url, `/oauth2/${app.id}`, client, cookies[0]!);
  await server.stop();

  const minimalClient: Client = { id: 'minimal-client', secret: randomBytes(24).toString('hex') };
  const minimal = await startServer(
    'oidc-provider (minimal)',
    { MINIMAL_CLIENT_ID: minimalClient.id, MINIMAL_CLIENT_SECRET: minimalClient.secret, MINIMAL_REDIRECT_URI: CALLBACK },
    'bench/minimal/oidc-provider.ts',
  );
  const minimalCookies = await minimalFirstAuthorizations(minimal.url, minimalClient, config.connections + 1);
  const bFlow = await load(minimal, codeFlow('', minimalClient, minimalCookies));
  await minimal.stop();

  const flows = (m: { requestsPerSecond: number }) => m.requestsPerSecond / 2;
  const assetsGzip = assets.parts.reduce((sum, p) => sum + p.gzip, 0);
  const pageCpu = cpuMs(gPage);
  const targets: Target[] = [
    {
      name: '`GET /a/{id}/sign-in` server CPU per answer',
      gatehouse: `${num(pageCpu, 2)} ms`,
      baseline: '–',
      required: `≤ ${PAGE_CPU_MS} ms`,
      pass: pageCpu <= PAGE_CPU_MS,
    },
    {
      name: 'sign-in page script + style, gzip',
      gatehouse: `${num(assetsGzip / 1000, 1)} kB`,
      baseline: '–',
      required: `≤ ${PAGE_ASSETS_BYTES / 1000} kB`,
      pass: assetsGzip <= PAGE_ASSETS_BYTES,
    },
    ratioTarget(
      'returning person\u2019s code flow (authorize + token) throughput',
      flows(gFlow),
      flows(bFlow),
      'flows/s',
      '≥',
      0.5,
    ),
  ];
  return {
    title: 'Hosted sign-in: the page, and a returning person\u2019s code flow against a bare oidc-provider',
    software: [db.version],
    targets,
    method: [
      `The sign-in page: \`GET /a/{id}/sign-in\` with no cookie (a first visit: the CSRF cookie is set; magic links and passkeys offered — the ` +
        'pages\u2019 origin is allowed, so the WebAuthn script is inline — and the default branding), under the common closed-loop load; its server CPU per answer is the target. ' +
        'Its weight: every `<script>` and `<style>` of the real page, inline or linked (linked ones fetched), each gzipped ' +
        '(level 6) on its own and summed.',
      `The code flow: ${browsers.length} people sign in on the hosted pages by magic link (form, mail, button) and each ` +
        'authorizes one confidential client once (the provider opens its session from the hosted one, the consent page, ' +
        'Allow, the code, its exchange). Under load, connection i is person i\u2019s browser, returning: ' +
        '`GET /oauth2/{id}/auth` with its cookies (the hosted session\u2019s `gh_session_<id>` and the provider\u2019s ' +
        '`_session`), a new PKCE challenge and state each time, answered 303 to the callback with a code (anything else ' +
        'fails the run); then `POST /oauth2/{id}/token` (authorization_code, the verifier, client_secret_basic), answered ' +
        '200 with an EdDSA ID token. Two requests per flow: flows/s is requests/s ÷ 2, and the latencies are of both.',
      'minimal: `bench/minimal/oidc-provider.ts`, oidc-provider (the library Gatehouse\u2019s provider is built on) alone ' +
        'with its in-memory adapter, one confidential client, PKCE required, EdDSA ID tokens, the same lifetimes; each ' +
        'person signs in once through its own interaction route; then the same flow with its session cookie. No database.',
    ],
    measurements: [gPage, gFlow, bFlow],
    details: [
      [
        '| sign-in page part | bytes | gzip bytes |',
        '|---|---:|---:|',
        `| HTML (whole page) | ${num(assets.html.bytes)} | ${num(assets.html.gzip)} |`,
        ...assets.parts.map((p) => `| ${p.kind} | ${num(p.bytes)} | ${num(p.gzip)} |`),
        `| script + style | ${num(assets.parts.reduce((s, p) => s + p.bytes, 0))} | ${num(assetsGzip)} |`,
      ].join('\n'),
    ],
    notes: [
      `Server CPU per flow: Gatehouse ${num(2 * cpuMs(gFlow), 2)} ms (PostgreSQL ${num((2000 * gFlow.databaseCores) / gFlow.requestsPerSecond, 2)} ` +
        `ms beside it), the bare provider ${num(2 * cpuMs(bFlow), 2)} ms.`,
      `PostgreSQL statements per returning flow (authorize + token; counted as the scratch database's transactions over ${COUNTED_FLOWS} flows run one at a time, less an idle window as long): ${num(perFlow, 2)}.`,
      'The same-run ratio is the result; the absolute figures are this machine\u2019s.',
    ],
  };
}
