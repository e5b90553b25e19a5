import type { Page } from 'playwright-core';
import { LOGIN_URL } from './oauth2.ts';
import { ok, type TestApp, type TestServer } from './server.ts';
import { endUser, type SmtpSink, signIn, type Tokens } from './sign-in.ts';

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
 * The person signs in on the application's pages and approves what the app asks, in the app's login page (the
 * application's `settings.oauth2.login_url`, `LOGIN_URL`): a magic link, their organization made the active one, the
 * interaction completed with every requested scope. Answers where the provider then sends the browser.
 */
async function signInAtLoginPage(person: Person, loginPage: URL): Promise<string> {
  const uid = loginPage.searchParams.get('interaction');
  if (!uid) throw new Error(`not an interaction: ${loginPage.href}`);
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

const atLoginPage = (url: URL) => `${url.origin}${url.pathname}` === LOGIN_URL;

/**
 * A relying party sent the person's browser to `authorizationUrl`: they sign in and approve, and the browser follows
 * the provider back to the app (its callback, then wherever the app sends it). Answers the app's last answer.
 */
export async function signInOnHostedPages(
  person: Person,
  browser: HttpBrowser,
  authorizationUrl: string,
): Promise<{ url: URL; response: Response }> {
  const atLogin = await browser.follow(authorizationUrl, atLoginPage);
  if (!atLoginPage(atLogin.url)) throw new Error(`the provider did not ask the person to sign in: ${atLogin.url.href}`);
  return browser.follow(await signInAtLoginPage(person, atLogin.url));
}

/**
 * The same in Chromium: while `page` is open, a visit to the sign-in page signs the person in and sends the browser
 * on to the provider (Playwright answers the page's URL with that redirect).
 */
export async function signInOnHostedPagesIn(page: Page, person: Person): Promise<void> {
  await page.route(`${LOGIN_URL}**`, async (route) => {
    const location = await signInAtLoginPage(person, new URL(route.request().url()));
    await route.fulfill({ status: 303, headers: { location } });
  });
}
