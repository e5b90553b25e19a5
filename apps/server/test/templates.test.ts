import { describe, expect, it } from 'vitest';
import { bearer, scopedKey, uniqueEmail } from './helpers/fixtures.ts';
import { expectError, isoDate, ok, rawRequest, sql, type TestApp, UUID, until } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { linkIn } from './helpers/smtp.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

const start = (app: TestApp, address: string) => endUser(app, 'POST', '/v1/auth/magic-link/start', { email: address });
const templatePath = (app: TestApp, key = 'magic_link', id = app.id) => `/v1/applications/${id}/templates/${key}`;

const KEYS = ['magic_link', 'passkey_added', 'passkey_removed', 'mfa_factor_added', 'mfa_factor_removed'];
const DEFAULT_SUBJECT = (name: string) => `Your sign-in link for ${name}`;

async function mailedLink(app: TestApp, address: string) {
  await ok(start(app, address));
  const mail = await suite.smtp.next(address);
  return { mail, link: linkIn(mail) };
}

const messages = async (app: TestApp, query = '') => ok(app.rest('GET', `/v1/messages${query}`));
/** The messages to `address` once the outbox has settled them (delivery is asynchronous: `queued` until then). */
const messagesTo = (app: TestApp, address: string) =>
  until(async () => {
    const page = await messages(app, '?limit=100');
    const found = page.messages.filter((m: { to: string }) => m.to === address);
    return found.length && found.every((m: { status: string }) => m.status !== 'queued') ? found : undefined;
  }, `a settled message to ${address}`);

describe('S14 GET /v1/applications/{id}/templates/catalog', () => {
  it('lists every message the service sends, with label, channel and documented variables', async () => {
    const app = await suite.server.createApp();
    const catalog = await ok(app.rest('GET', `/v1/applications/${app.id}/templates/catalog`));
    expect(Array.isArray(catalog)).toBe(true);
    expect(catalog.map((t: { key: string }) => t.key)).toEqual(expect.arrayContaining(KEYS));
    for (const entry of catalog) {
      expect(Object.keys(entry).sort(), entry.key).toEqual([
        'channel',
        'delivered',
        'description',
        'has_subject',
        'key',
        'label',
        'variables',
      ]);
      expect(entry).toEqual({
        key: expect.stringMatching(/^[a-z][a-z0-9_]*$/),
        label: expect.any(String),
        description: expect.any(String),
        channel: expect.stringMatching(/^(email|sms)$/),
        has_subject: expect.any(Boolean),
        delivered: expect.any(Boolean),
        variables: expect.any(Array),
      });
      expect(entry.label.length).toBeGreaterThan(0);
      for (const variable of entry.variables) {
        expect(variable, entry.key).toEqual({
          name: expect.any(String),
          description: expect.any(String),
          example: expect.any(String),
        });
      }
    }
    const magicLink = catalog.find((t: { key: string }) => t.key === 'magic_link');
    expect(magicLink).toMatchObject({ channel: 'email', has_subject: true, delivered: true });
    expect(magicLink.variables.map((v: { name: string }) => v.name)).toEqual(expect.arrayContaining(['link', 'app_name']));
  });

  it('another application’s id is 404', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    expectError(await app.rest('GET', `/v1/applications/${other.id}/templates/catalog`), 404, 'not_found');
  });
});

describe('GET / PUT / DELETE /v1/applications/{id}/templates/{key}', () => {
  it('GET answers the default until overridden', async () => {
    const app = await suite.server.createApp();
    const template = await ok(app.rest('GET', templatePath(app)));
    expect(template).toEqual({
      key: 'magic_link',
      channel: 'email',
      subject: 'Your sign-in link for {{app_name}}',
      body: expect.stringContaining('{{'),
      delivered: true,
      customized: false,
      updated_at: null,
    });
  });

  it('PUT overrides subject and body; the next mail uses them, {{x}} HTML-escaped and {{{link}}} raw', async () => {
    const app = await suite.server.createApp({ name: '<b>Acme</b>' });
    const body = '<p>Welcome to {{app_name}}, {{email}}.</p><p><a href="{{{link}}}">Sign in</a></p><p>Escaped: {{link}}</p>';
    const put = await ok(app.rest('PUT', templatePath(app), { subject: 'Sign in to {{app_name}} now', body }));
    expect(put).toEqual({
      key: 'magic_link',
      channel: 'email',
      subject: 'Sign in to {{app_name}} now',
      body,
      delivered: true,
      customized: true,
      updated_at: isoDate,
    });
    expect(await ok(app.rest('GET', templatePath(app)))).toEqual(put);

    const address = uniqueEmail('custom');
    await ok(start(app, address));
    const mail = await suite.smtp.next(address);
    expect(mail.subject.startsWith('Sign in to ')).toBe(true);
    expect(mail.subject.endsWith(' now')).toBe(true);
    expect(mail.subject).toContain('Acme');
    expect(mail.html).toContain('Welcome to &lt;b&gt;Acme&lt;');
    expect(mail.html).not.toContain('<b>Acme</b>');
    // The triple mustache is raw: a plain URL in the attribute.
    const raw = /<a href="([^"]+)">Sign in<\/a>/.exec(mail.html)?.[1];
    expect(raw).toBeDefined();
    expect(raw).not.toMatch(/&#x|&amp;/);
    const link = new URL(raw!);
    expect(link.origin + link.pathname).toMatch(/^http:\/\/gatehouse\.test\/a\/[0-9a-f-]{36}\/magic-link$/);
    expect(link.searchParams.get('token')).toMatch(/^ml_/);
    // The double mustache of the same link is escaped.
    expect(mail.html).toMatch(
      /Escaped: http:&#x2F;&#x2F;gatehouse\.test&#x2F;a&#x2F;[0-9a-f-]{36}&#x2F;magic-link\?token&#x3D;ml_/,
    );
    const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: link.searchParams.get('token') });
    expect(verified.status).toBe(200);
  });

  it('the mail’s text part carries a usable link', async () => {
    const app = await suite.server.createApp();
    const address = uniqueEmail('text-part');
    const { mail, link } = await mailedLink(app, address);
    expect(mail.text).toContain(link.toString());
  });

  it('a template that does not parse is 422 and changes nothing', async () => {
    const app = await suite.server.createApp();
    for (const change of [
      { body: '<p>{{#section}}never closed</p>' },
      { subject: 'Hello {{app_name' },
      { body: '{{/closing}}' },
    ]) {
      expectError(await app.rest('PUT', templatePath(app), change), 422, 'validation_failed', JSON.stringify(change));
    }
    expect((await ok(app.rest('GET', templatePath(app)))).customized).toBe(false);
  });

  it('an unknown key is 404; another application’s id is 404', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    for (const [method, path, body] of [
      ['GET', templatePath(app, 'no_such_template'), undefined],
      ['PUT', templatePath(app, 'no_such_template'), { subject: 'x' }],
      ['DELETE', templatePath(app, 'no_such_template'), undefined],
      ['POST', `${templatePath(app, 'no_such_template')}/preview`, {}],
      ['GET', templatePath(app, 'magic_link', other.id), undefined],
      ['PUT', templatePath(app, 'magic_link', other.id), { subject: 'Hijacked {{app_name}}' }],
      ['DELETE', templatePath(app, 'magic_link', other.id), undefined],
      ['POST', `${templatePath(app, 'magic_link', other.id)}/preview`, {}],
    ] as const) {
      expectError(await app.rest(method, path, body), 404, 'not_found', `${method} ${path}`);
    }
    expect((await ok(other.rest('GET', templatePath(other)))).customized).toBe(false);
  });

  it('DELETE resets to the default, and the default mail returns', async () => {
    const app = await suite.server.createApp({ name: 'Reset app' });
    await ok(app.rest('PUT', templatePath(app), { subject: 'Custom subject for {{app_name}}' }));
    const first = uniqueEmail('custom');
    await ok(start(app, first));
    expect((await suite.smtp.next(first)).subject).toBe('Custom subject for Reset app');

    expect(await ok(app.rest('DELETE', templatePath(app)))).toEqual({ id: 'magic_link', deleted: true });
    expect(await ok(app.rest('GET', templatePath(app)))).toMatchObject({ customized: false, updated_at: null });
    const second = uniqueEmail('default');
    await ok(start(app, second));
    expect((await suite.smtp.next(second)).subject).toBe(DEFAULT_SUBJECT('Reset app'));
  });

  it('scopes: settings:read reads, settings:write writes', async () => {
    const app = await suite.server.createApp();
    const reader = await scopedKey(app, ['settings:read']);
    const writer = await scopedKey(app, ['settings:write']);
    const stranger = await scopedKey(app, ['users:read']);

    for (const key of [reader, writer]) {
      expect((await app.rest('GET', `/v1/applications/${app.id}/templates/catalog`, undefined, bearer(key))).status).toBe(200);
      expect((await app.rest('GET', templatePath(app), undefined, bearer(key))).status).toBe(200);
      expect((await app.rest('POST', `${templatePath(app)}/preview`, {}, bearer(key))).status).toBe(200);
      expect((await app.rest('GET', '/v1/messages', undefined, bearer(key))).status).toBe(200);
    }
    expectError(
      await app.rest('PUT', templatePath(app), { subject: 'x {{app_name}}' }, bearer(reader)),
      403,
      'insufficient_scope',
    );
    expectError(await app.rest('DELETE', templatePath(app), undefined, bearer(reader)), 403, 'insufficient_scope');
    expect((await ok(app.rest('GET', templatePath(app)))).customized).toBe(false);

    expect((await app.rest('PUT', templatePath(app), { subject: 'x {{app_name}}' }, bearer(writer))).status).toBe(200);
    expect((await app.rest('DELETE', templatePath(app), undefined, bearer(writer))).status).toBe(200);

    for (const [method, path] of [
      ['GET', `/v1/applications/${app.id}/templates/catalog`],
      ['GET', templatePath(app)],
      ['GET', '/v1/messages'],
    ] as const) {
      expectError(await app.rest(method, path, undefined, bearer(stranger)), 403, 'insufficient_scope', path);
    }
  });
});

describe('POST /v1/applications/{id}/templates/{key}/preview', () => {
  it('renders with the examples, the application name and the given variables, storing nothing', async () => {
    const app = await suite.server.createApp({ name: 'Preview & Co' });
    const examples = await ok(app.rest('POST', `${templatePath(app, 'passkey_added')}/preview`, {}));
    expect(Object.keys(examples).sort()).toEqual(['html', 'subject', 'text']);
    expect(examples.subject).toBe('A passkey was added to your Preview & Co account');
    expect(examples.html).toContain('MacBook Touch ID');
    expect(examples.html).toContain('2026-11-22T05:14:30Z');
    expect(examples.html).toContain('Preview &amp; Co');
    expect(examples.text).toContain('MacBook Touch ID');
    expect(examples.text).not.toMatch(/<[a-z]/);

    const given = await ok(
      app.rest('POST', `${templatePath(app, 'passkey_added')}/preview`, { variables: { name: '<i>YubiKey</i>' } }),
    );
    expect(given.html).toContain('&lt;i&gt;YubiKey&lt;');
    expect(given.html).not.toContain('<i>YubiKey</i>');
    expect(given.html).toContain('2026-11-22T05:14:30Z');

    const draft = await ok(
      app.rest('POST', `${templatePath(app)}/preview`, {
        subject: 'Hi {{email}}',
        body: '<p>{{greeting}}: <a href="{{{link}}}">go</a></p>',
        variables: { greeting: 'Hello', link: 'https://app.example.com/in?token=abc&x=1' },
      }),
    );
    expect(draft.subject).toBe('Hi ada@example.com');
    expect(draft.html).toBe('<p>Hello: <a href="https://app.example.com/in?token=abc&x=1">go</a></p>');
    expectError(await app.rest('POST', `${templatePath(app)}/preview`, { body: '{{#open}}' }), 422, 'validation_failed');
    expect((await ok(app.rest('GET', templatePath(app)))).customized).toBe(false);
  });
});

describe('POST /v1/applications/{id}/templates/{key}/test', () => {
  it('mails the saved template to the address with the example variables; logged; settings:write; 10 a minute', async () => {
    const app = await suite.server.createApp({ name: 'Test Send' });
    await ok(app.rest('PUT', templatePath(app, 'passkey_added'), { subject: 'Tested: {{name}} for {{email}}' }));
    const address = uniqueEmail('test-send');
    const sent = await ok(app.rest('POST', `${templatePath(app, 'passkey_added')}/test`, { to: address }));
    expect(sent).toEqual({ message_id: expect.stringMatching(UUID), to: address, status: 'queued' });
    const mail = await suite.smtp.next(address);
    expect(mail.subject).toBe(`Tested: MacBook Touch ID for ${address}`);
    expect(mail.html).toContain('Test Send');
    const [logged] = await messagesTo(app, address);
    expect(logged).toMatchObject({ id: sent.message_id, template_key: 'passkey_added', status: 'sent' });

    expectError(await app.rest('POST', `${templatePath(app)}/test`, { to: 'not an address' }), 422, 'validation_failed');
    expectError(await app.rest('POST', `${templatePath(app, 'no_such_template')}/test`, { to: address }), 404, 'not_found');
    const other = await suite.server.createApp();
    expectError(await app.rest('POST', `${templatePath(app, 'magic_link', other.id)}/test`, { to: address }), 404, 'not_found');
    const reader = await scopedKey(app, ['settings:read']);
    expectError(await app.rest('POST', `${templatePath(app)}/test`, { to: address }, bearer(reader)), 403, 'insufficient_scope');

    // A template that is not delivered is handed over as message.created, as every message of it is.
    await ok(app.rest('PUT', templatePath(app), { delivered: false }));
    const handed = await ok(app.rest('POST', `${templatePath(app)}/test`, { to: address }));
    expect(handed.status).toBe('not_delivered');

    // Bounded per application: 10 a minute (two spent above, and the refused ones spend nothing).
    let status = 200;
    for (let i = 0; i < 9 && status === 200; i++) {
      status = (await app.rest('POST', `${templatePath(app, 'passkey_added')}/test`, { to: address })).status;
    }
    expect(status).toBe(429);
  });
});

describe('delivered: false', () => {
  it('sends no mail; emits message.created with the link and logs the message as not_delivered', async () => {
    const app = await suite.server.createApp();
    expect(await ok(app.rest('PUT', templatePath(app), { delivered: false }))).toMatchObject({
      delivered: false,
      customized: true,
    });
    const address = uniqueEmail('developer-delivers');
    await ok(start(app, address));

    const event = await until(async () => {
      const page = await ok(app.rest('GET', '/v1/events?type=message.created'));
      return page.events[0];
    }, 'message.created');
    expect(event.data).toMatchObject({ template_key: 'magic_link', channel: 'email', to: address });
    const link = new URL(event.data.variables.link);
    expect(link.origin + link.pathname).toMatch(/^http:\/\/gatehouse\.test\/a\/[0-9a-f-]{36}\/magic-link$/);
    const token = link.searchParams.get('token')!;
    expect(token).toMatch(/^ml_/);

    const [logged] = await messagesTo(app, address);
    expect(logged).toMatchObject({ template_key: 'magic_link', to: address, status: 'not_delivered' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(suite.smtp.inbox.filter((m) => m.to === address)).toEqual([]);

    // The developer delivers the link; it signs in.
    const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
  });
});

describe('GET /v1/messages', () => {
  it('development: paginated, newest first, bodies with the link', async () => {
    const app = await suite.server.createApp();
    const first = uniqueEmail('first');
    const second = uniqueEmail('second');
    const { link: firstLink } = await mailedLink(app, first);
    await messagesTo(app, first);
    const { link: secondLink } = await mailedLink(app, second);
    await messagesTo(app, second);

    const page = await messages(app);
    expect(Object.keys(page).sort()).toEqual(['limit', 'messages', 'offset', 'total']);
    expect(page).toMatchObject({ total: 2, limit: 25, offset: 0 });
    expect(page.messages.map((m: { to: string }) => m.to)).toEqual([second, first]);
    for (const message of page.messages) {
      expect(message).toEqual({
        id: expect.stringMatching(UUID),
        template_key: 'magic_link',
        channel: 'email',
        to: expect.any(String),
        subject: DEFAULT_SUBJECT('Test app'),
        body: expect.any(String),
        status: 'sent',
        created_at: isoDate,
      });
    }
    expect(page.messages[0].body).toContain(secondLink.searchParams.get('token'));
    expect(page.messages[0].body).toContain(secondLink.toString());
    expect(page.messages[1].body).toContain(firstLink.toString());

    const second2 = await messages(app, '?limit=1&offset=1');
    expect(second2).toMatchObject({ total: 2, limit: 1, offset: 1 });
    expect(second2.messages.map((m: { to: string }) => m.to)).toEqual([first]);
    for (const bad of ['?limit=0', '?limit=101', '?offset=-1', '?limit=abc']) {
      expectError(await app.rest('GET', `/v1/messages${bad}`), 422, 'validation_failed', bad);
    }
  });

  it('production: the mail carries the link, the log never does', async () => {
    const app = await suite.server.createApp({ environment: 'production' });
    const address = uniqueEmail('prod');
    const { link } = await mailedLink(app, address);
    const token = link.searchParams.get('token')!;
    const [logged] = await messagesTo(app, address);
    expect(logged.status).toBe('sent');
    expect(logged.body).not.toContain(token);
    expect(logged.body).not.toContain(token.slice(3));
    expect(logged.body).not.toContain('sign-in');
    const rows = await sql(suite.server, 'select * from messages where application_id = ?', [app.id]);
    expect(JSON.stringify(rows)).not.toContain(token.slice(3));
  });

  it('each application sees only its own messages', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const address = uniqueEmail('mine');
    await mailedLink(app, address);
    await messagesTo(app, address);
    expect((await messages(other)).total).toBe(0);
  });
});

describe('the magic link opens the application\u2019s hosted page; old /sign-in/verify links still work', () => {
  it('the link opens /a/{id}/magic-link: HTML, no-store, a nonce CSP without framing, and opening it consumes nothing', async () => {
    const app = await suite.server.createApp();
    const { link } = await mailedLink(app, uniqueEmail('hosted'));
    expect(link.origin + link.pathname).toBe(`http://gatehouse.test/a/${app.id}/magic-link`);
    expect(link.searchParams.get('application_id')).toBeNull();
    // What a mail scanner does: fetch the page, twice.
    for (let i = 0; i < 2; i++) {
      const page = await rawRequest(suite.server.url, 'GET', `${link.pathname}${link.search}`);
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/^text\/html/);
      expect(page.headers.get('cache-control')).toBe('no-store');
      expect(String(page.body)).toMatch(/<form|<button/);
      const csp = page.headers.get('content-security-policy')!;
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).toContain("default-src 'none'");
      expect(csp).toMatch(/'nonce-/);
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    }
    // Helmet is scoped to the hosted pages: the API's JSON answers carry none of its headers (nor pay for nonces).
    const api = await fetch(`${suite.server.url}/v1/openapi.json`);
    expect(api.headers.get('content-security-policy')).toBeNull();
    const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token: link.searchParams.get('token') });
    expect(verified.status, JSON.stringify(verified.body)).toBe(200);
    expect(verified.body.data.status).toBe('complete');
  });

  it('a link mailed before (/sign-in/verify?application_id=&token=) redirects to the application\u2019s page, token untouched', async () => {
    const app = await suite.server.createApp();
    const { link } = await mailedLink(app, uniqueEmail('old-link'));
    const token = link.searchParams.get('token')!;
    const old = `/sign-in/verify?application_id=${app.id}&token=${encodeURIComponent(token)}`;
    // A forged Host does not move the redirect (SECURITY 10); nothing is consumed by following it.
    const response = await fetch(`${suite.server.url}${old}`, {
      redirect: 'manual',
      headers: { 'x-forwarded-host': 'evil.example.com', forwarded: 'host=evil.example.com;proto=https' },
    });
    expect(response.status).toBe(302);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('referrer-policy')).toBe('no-referrer');
    const target = new URL(response.headers.get('location')!);
    expect(target.origin + target.pathname).toBe(`http://gatehouse.test/a/${app.id}/magic-link`);
    expect(target.searchParams.get('token')).toBe(token);
    const page = await rawRequest(suite.server.url, 'GET', `${target.pathname}${target.search}`);
    expect(page.status).toBe(200);
    expect(String(page.body)).toContain(`value="${token}"`);
    const verified = await endUser(app, 'POST', '/v1/auth/magic-link/verify', { token });
    expect(verified.body.data.status).toBe('complete');
  });

  it('an old link without a valid application id or token is not redirected anywhere', async () => {
    for (const query of ['', '?token=ml_x', '?application_id=nope&token=ml_x', '?application_id=../../evil&token=ml_x']) {
      const response = await fetch(`${suite.server.url}/sign-in/verify${query}`, { redirect: 'manual' });
      expect(response.status, query).toBe(404);
      expect(response.headers.get('location'), query).toBeNull();
    }
    const app = await suite.server.createApp();
    const response = await fetch(`${suite.server.url}/sign-in/verify?application_id=${app.id}`, { redirect: 'manual' });
    expect(response.status).toBe(404);
  });
});
