import { type IncomingMessage, request } from 'node:http';
import type { TestApp, TestServer } from './server.ts';
import type { SmtpSink } from './sign-in.ts';
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
  readonly cookies = new Map<string, string>();
  readonly server: TestServer;
  readonly headers: Record<string, string>;
  constructor(server: TestServer, headers: Record<string, string> = {}) {
    this.server = server;
    this.headers = headers;
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
