import { type IncomingMessage, request } from 'node:http';
import type { Page } from 'playwright-core';
import { LOGIN_URL } from './oauth2.ts';
import { ok, type TestApp, type TestServer } from './server.ts';
import { endUser, type SmtpSink, signIn, type Tokens } from './sign-in.ts';
import { linkIn } from './smtp.ts';

/** A page the hosted pages answered. */
export interface HostedPage {
  status: number;
  headers: Headers;
  html: string;
  /** Where a redirect sends the browser (path and query on the server), when it is one. */
  location: string | undefined;
}

const decode = (value: string) =>
  value
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The hidden fields of the form posting to `action` on a page (the CSRF token, a pending token…). */
export function hiddenFields(html: string, action: string): Record<string, string> {
  const start = html.indexOf(`action="${action}"`);
  if (start < 0) throw new Error(`no form posting to ${action} on the page:\n${html}`);
  const form = html.slice(start, html.indexOf('</form>', start));
  const fields: Record<string, string> = {};
  for (const match of form.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    fields[match[1]!] = decode(match[2]!);
  }
  return fields;
}

/**
 * A browser on the hosted pages, over plain HTTP: it keeps cookies as a browser does (by name; path and expiry are
 * the server's business here), follows nothing by itself, and posts forms with their hidden fields. `baseUrl` is the
 * server's configured base URL: links in mails and redirects name it, and are fetched from the test server instead.
 */
export class HostedBrowser {
  readonly cookies: Map<string, string>;
  readonly server: TestServer;
  readonly headers: Record<string, string>;
  /** `cookies`: another browser's jar for the server, to continue in it (an `HttpBrowser` going through the provider). */
  constructor(server: TestServer, headers: Record<string, string> = {}, cookies = new Map<string, string>()) {
    this.server = server;
    this.headers = headers;
    this.cookies = cookies;
  }

  private async request(method: string, path: string, body?: URLSearchParams): Promise<HostedPage> {
    const url = new URL(path, this.server.url);
    const payload = body?.toString();
    // node:http rather than fetch: fetch does not send a Host header of ours (the custom-domain tests need one).
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      const outgoing = request(
        new URL(url.pathname + url.search, this.server.url),
        {
          method,
          headers: {
            ...this.headers,
            ...(this.cookies.size ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
            ...(payload === undefined
              ? {}
              : { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(payload) }),
          },
        },
        resolve,
      );
      outgoing.on('error', reject);
      outgoing.end(payload);
    });
    const chunks: Buffer[] = [];
    for await (const chunk of response) chunks.push(chunk as Buffer);
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const one of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, one);
    }
    for (const line of headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';');
      const index = pair.indexOf('=');
      const name = pair.slice(0, index).trim();
      const value = pair.slice(index + 1).trim();
      const expired = attributes.some((a) => /^\s*(max-age=0|expires=thu, 01 jan 1970)/i.test(a));
      if (expired || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    const location = headers.get('location') ?? undefined;
    return { status: response.statusCode ?? 0, headers, html: Buffer.concat(chunks).toString(), location };
  }

  get(path: string): Promise<HostedPage> {
    return this.request('GET', path);
  }

  /** Posts the form of `page` that posts to `action`: its hidden fields, then `fields`. */
  submit(page: HostedPage, action: string, fields: Record<string, string> = {}): Promise<HostedPage> {
    return this.request('POST', action, new URLSearchParams({ ...hiddenFields(page.html, action), ...fields }));
  }

  /** A raw form post (a forged one, in the tests that try). */
  post(path: string, fields: Record<string, string>): Promise<HostedPage> {
    return this.request('POST', path, new URLSearchParams(fields));
  }

  /** Follows redirects from `page` (GETs, as a browser does after a 303) until a page that is not one. */
  async follow(page: HostedPage): Promise<HostedPage> {
    let current = page;
    for (let hops = 0; current.location && hops < 10; hops++) current = await this.get(current.location);
    return current;
  }
}

/**
 * Signs `email` in on the application's hosted pages, in `browser`, with a magic link opened in the same browser:
 * the sign-in form, the mail, the link's button. Answers the page the sign-in ends on (a redirect, or the page of the
 * next step: a second factor, consent documents). `query` is added to the sign-in page's URL (`interaction=…`).
 */
export async function signInOnHostedPages(
  browser: HostedBrowser,
  smtp: SmtpSink,
  app: TestApp,
  email: string,
  query = '',
): Promise<HostedPage> {
  const base = `/a/${app.id}`;
  const form = await browser.get(`${base}/sign-in${query}`);
  if (form.status !== 200) throw new Error(`the sign-in page answered ${form.status}: ${form.html}`);
  const started = await browser.submit(form, `${base}/sign-in`, { email });
  if (started.status !== 303) throw new Error(`the sign-in form answered ${started.status}: ${started.html}`);
  const link = linkIn(await smtp.next(email));
  const landing = await browser.get(link.pathname + link.search);
  return browser.submit(landing, `${base}/magic-link`);
}

// ——— A person signing in to a relying party through the application's OpenID provider ———

/**
 * A person's browser over plain HTTP: a cookie jar per origin (scheme, host and port: the provider and the apps of
 * these tests share 127.0.0.1), redirects followed by hand, and origins answered in process (an app that is only a
 * `(Request) => Response` handler, as Auth.js is).
 */
export class HttpBrowser {
  readonly jars = new Map<string, Map<string, string>>();
  readonly handlers = new Map<string, (request: Request) => Promise<Response>>();

  /** Answers `origin`'s requests with `handler` instead of the network. */
  serve(origin: string, handler: (request: Request) => Promise<Response>): this {
    this.handlers.set(new URL(origin).origin, handler);
    return this;
  }

  cookies(origin: string): Map<string, string> {
    const key = new URL(origin).origin;
    const jar = this.jars.get(key) ?? new Map<string, string>();
    this.jars.set(key, jar);
    return jar;
  }

  async request(url: string, init: { method?: string; body?: URLSearchParams; headers?: Record<string, string> } = {}) {
    const jar = this.cookies(url);
    const headers = new Headers(init.headers);
    if (jar.size) headers.set('cookie', [...jar].map(([k, v]) => `${k}=${v}`).join('; '));
    const request = new Request(url, { method: init.method ?? 'GET', headers, body: init.body, redirect: 'manual' });
    const handler = this.handlers.get(new URL(url).origin);
    const response = handler ? await handler(request) : await fetch(request);
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      const name = pair.slice(0, at).trim();
      const value = pair.slice(at + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line) || /max-age=0(;|$)/i.test(line)) jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  }

  /** Follows redirects from `url` (GET) until an answer that is not one, or `stop` says so. */
  async follow(url: string, stop: (next: URL) => boolean = () => false): Promise<{ url: URL; response: Response }> {
    let next = new URL(url);
    for (let hops = 0; hops < 20; hops++) {
      if (stop(next)) return { url: next, response: new Response(null, { status: 204 }) };
      const response = await this.request(next.href);
      const location = response.headers.get('location');
      if (!location || response.status < 300 || response.status > 399) return { url: next, response };
      await response.body?.cancel();
      next = new URL(location, next);
    }
    throw new Error(`too many redirects from ${url}`);
  }
}

export interface Person {
  server: TestServer;
  smtp: SmtpSink;
  app: TestApp;
  email: string;
  /** The organization the person works in: signed in, they make it their session's active one. */
  organization?: string;
}

/**
 * The sign-in page of the application's own app (`settings.oauth2.login_url`, `LOGIN_URL` in the tests), played
 * through the API: a magic link, the person's organization made the active one, the interaction completed with every
 * requested scope. Answers where the provider then sends the browser.
 */
async function signInAtAppLoginPage(person: Person, uid: string): Promise<string> {
  const { server, smtp, app, email, organization } = person;
  let { access_token } = (await signIn(server, smtp, app, email)).tokens;
  if (organization) {
    const switched = await ok(
      endUser<Tokens>(app, 'POST', '/v1/auth/session/organization', { organization_id: organization }, access_token),
    );
    access_token = switched.access_token;
  }
  const interaction = await ok(endUser(app, 'GET', `/v1/oauth2/interactions/${uid}`));
  const approved = interaction.scopes.map((s: { name: string }) => s.name);
  const { redirect_to } = await ok(
    endUser(app, 'POST', `/v1/oauth2/interactions/${uid}/complete`, { approved_scopes: approved }, access_token),
  );
  return redirect_to;
}

/** Where the provider asks the person to sign in: the app's login page, or the application's hosted sign-in page. */
function loginPageOf(person: Person, url: URL): { kind: 'app'; uid: string } | { kind: 'hosted' } | undefined {
  const uid = url.searchParams.get('interaction');
  if (`${url.origin}${url.pathname}` === LOGIN_URL && uid) return { kind: 'app', uid };
  if (url.pathname === `/a/${person.app.id}/sign-in` && uid) return { kind: 'hosted' };
  return undefined;
}

/**
 * A relying party sent the person's browser to `authorizationUrl`: the person signs in where the provider sends them,
 * and the browser follows the provider back to the app (its callback, then wherever the app sends it). Answers the
 * app's last answer. On the hosted pages the person signs in with `signInOnHostedPages`, in this browser's cookies for
 * the server (whose base URL must then be its real address, as in the recipe tests).
 */
export async function signInThroughProvider(
  person: Person,
  browser: HttpBrowser,
  authorizationUrl: string,
): Promise<{ url: URL; response: Response }> {
  const atLogin = await browser.follow(authorizationUrl, (next) => loginPageOf(person, next) !== undefined);
  const login = loginPageOf(person, atLogin.url);
  if (!login) throw new Error(`the provider did not ask the person to sign in: ${atLogin.url.href}`);
  if (login.kind === 'app') return browser.follow(await signInAtAppLoginPage(person, login.uid));
  const { server, smtp, app, email, organization } = person;
  const pages = new HostedBrowser(server, {}, browser.cookies(atLogin.url.href));
  let page = await signInOnHostedPages(pages, smtp, app, email, atLogin.url.search);
  const authorize = `/a/${app.id}/sign-in/authorize`;
  const picker = `/a/${app.id}/organization`;
  for (let steps = 0; steps < 20; steps++) {
    if (page.location) {
      const next = new URL(page.location, atLogin.url);
      // Back to the app: the browser follows the rest.
      if (next.origin !== atLogin.url.origin) return browser.follow(next.href);
      page = await pages.get(next.pathname + next.search);
    } else if (page.html.includes(`action="${picker}"`) && organization) {
      page = await pages.submit(page, picker, { organization_id: organization });
    } else if (page.html.includes(`action="${authorize}"`)) {
      // Allow, with every scope ticked as the page offers them.
      const ticked = [...page.html.matchAll(/name="(scope:[^"]+)" value="on" checked/g)].map((m) => [m[1]!, 'on']);
      page = await pages.submit(page, authorize, { ...Object.fromEntries(ticked), decision: 'allow' });
    } else {
      throw new Error(`the hosted pages stopped on a page (${page.status}):\n${page.html}`);
    }
  }
  throw new Error('the hosted pages did not send the browser back to the app');
}

/**
 * The same in Chromium, on the hosted pages: the provider has sent `page` to the sign-in page; the person types their
 * email, opens the mailed link in the same browser, confirms, and allows what the app asks (their one organization
 * is chosen for them). Resolves once the browser has left the hosted pages.
 */
export async function signInOnHostedPagesIn(page: Page, person: Person): Promise<void> {
  const { app, smtp, email } = person;
  const base = `/a/${app.id}`;
  await page.waitForURL((url) => url.pathname === `${base}/sign-in`);
  await page.fill('#email', email);
  await page.click(`form[action="${base}/sign-in"] button[type="submit"]`);
  const link = linkIn(await smtp.next(email));
  await page.goto(link.href);
  await page.click(`form[action="${base}/magic-link"] button[type="submit"]`);
  await page.click('button[name="decision"][value="allow"]');
  await page.waitForURL((url) => !url.pathname.startsWith(`${base}/`));
}
