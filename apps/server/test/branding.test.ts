import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearer, scopedKey } from './helpers/fixtures.ts';
import { expectError, isoDate, MISSING, ok, rawRequest, rejection, sql } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });

const DEFAULT_BRANDING = { display_name: null, logo_url: null, primary_color: null, theme: 'auto', support_email: null };

describe('branding and sign-in settings', () => {
  it('default to no branding, theme auto, and every first factor on', async () => {
    const app = await suite.server.createApp();
    expect(app.application.settings.branding).toEqual(DEFAULT_BRANDING);
    expect(app.application.settings.sign_in).toEqual({ magic_link: true, passkeys: true });
    const read = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(read.settings.branding).toEqual(DEFAULT_BRANDING);
    expect(read.settings.sign_in).toEqual({ magic_link: true, passkeys: true });
  });

  it('reads settings stored before the keys existed with their defaults', async () => {
    const app = await suite.server.createApp();
    // An application created before this release: its stored settings lack both keys.
    await sql(suite.server, `update applications set settings = settings - 'branding' - 'sign_in' where id = ?`, [app.id]);
    const read = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(read.settings.branding).toEqual(DEFAULT_BRANDING);
    expect(read.settings.sign_in).toEqual({ magic_link: true, passkeys: true });
  });

  it('PATCH sets them, answers the colour lower-case, and GET reads them back', async () => {
    const app = await suite.server.createApp();
    const branding = {
      display_name: '  Acme Shop ',
      logo_url: 'https://cdn.example.com/logo.png',
      primary_color: '#4F46e5',
      theme: 'dark',
      support_email: 'help@example.com',
    };
    const patched = await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding, sign_in: { passkeys: false } } }),
    );
    const expected = { ...branding, display_name: 'Acme Shop', primary_color: '#4f46e5' };
    expect(patched.settings.branding).toEqual(expected);
    // A named key is filled with its own defaults: magic_link stays on.
    expect(patched.settings.sign_in).toEqual({ magic_link: true, passkeys: false });
    const read = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(read.settings.branding).toEqual(expected);
    expect(read.settings.sign_in).toEqual({ magic_link: true, passkeys: false });

    // Other keys are kept by a PATCH that does not name them; a branding PATCH replaces the whole key.
    const other = await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { sign_up: 'closed' } }));
    expect(other.settings.branding).toEqual(expected);
    const replaced = await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding: { theme: 'light' } } }));
    expect(replaced.settings.branding).toEqual({ ...DEFAULT_BRANDING, theme: 'light' });
    expect(replaced.settings.sign_in).toEqual({ magic_link: true, passkeys: false });
  });

  it('are accepted at creation too', async () => {
    const app = await suite.server.createApp({
      settings: { branding: { primary_color: '#ABCDEF' }, sign_in: { magic_link: false, passkeys: true } },
    });
    expect(app.application.settings.branding).toEqual({ ...DEFAULT_BRANDING, primary_color: '#abcdef' });
    expect(app.application.settings.sign_in).toEqual({ magic_link: false, passkeys: true });
  });

  it('refuses every malformed value with 422 and its path, and changes nothing', async () => {
    const app = await suite.server.createApp();
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ branding: { primary_color: 'red' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: '#fff' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: '#4f46e5 ' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: '#4f46e5\n' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: '#4f46e5ff' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: '#gggggg' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { primary_color: 'rgb(1,2,3)' } }, 'settings.branding.primary_color', 'validation_failed'],
      [{ branding: { theme: 'blue' } }, 'settings.branding.theme', 'validation_failed'],
      [{ branding: { theme: null } }, 'settings.branding.theme', 'validation_failed'],
      [{ branding: { display_name: 'x'.repeat(101) } }, 'settings.branding.display_name', 'validation_failed'],
      [{ branding: { display_name: '   ' } }, 'settings.branding.display_name', 'validation_failed'],
      [{ branding: { display_name: 'a\u0000b' } }, 'settings.branding.display_name', 'validation_failed'],
      [{ branding: { display_name: 42 } }, 'settings.branding.display_name', 'validation_failed'],
      [{ branding: { support_email: 'not-an-address' } }, 'settings.branding.support_email', 'validation_failed'],
      [{ branding: { support_email: '' } }, 'settings.branding.support_email', 'validation_failed'],
      [{ branding: { logo_url: 'javascript:alert(1)' } }, 'settings.branding.logo_url', 'invalid_url'],
      [{ branding: { logo_url: 'data:image/svg+xml,<svg/>' } }, 'settings.branding.logo_url', 'invalid_url'],
      [{ branding: { logo_url: '/logo.png' } }, 'settings.branding.logo_url', 'invalid_url'],
      [{ branding: { logo_url: 'https://user:pw@cdn.example.com/logo.png' } }, 'settings.branding.logo_url', 'invalid_url'],
      [{ branding: { logo_url: `https://cdn.example.com/${'a'.repeat(2048)}` } }, 'settings.branding.logo_url', 'invalid_url'],
      [{ branding: { colour: '#ffffff' } }, 'settings.branding', 'validation_failed'],
      [{ branding: null }, 'settings.branding', 'validation_failed'],
      [{ sign_in: { magic_link: 'yes' } }, 'settings.sign_in.magic_link', 'validation_failed'],
      [{ sign_in: { passkeys: 1 } }, 'settings.sign_in.passkeys', 'validation_failed'],
      [{ sign_in: { social: true } }, 'settings.sign_in', 'validation_failed'],
    ];
    for (const [settings, path, code] of cases) {
      const res = await app.rest('PATCH', `/v1/applications/${app.id}`, { settings });
      const label = JSON.stringify(settings);
      expectError(res, 422, code, label);
      expect(
        res.body.error.details?.map((d) => d.path),
        label,
      ).toContain(path);
    }
    const read = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(read.settings.branding).toEqual(DEFAULT_BRANDING);
    expect(read.settings.sign_in).toEqual({ magic_link: true, passkeys: true });
  });

  it('takes an http logo URL only in a development application', async () => {
    const dev = await suite.server.createApp();
    expect(dev.application.environment).toBe('development');
    const set = await ok(
      dev.rest('PATCH', `/v1/applications/${dev.id}`, { settings: { branding: { logo_url: 'http://localhost:3000/logo.png' } } }),
    );
    expect(set.settings.branding.logo_url).toBe('http://localhost:3000/logo.png');

    const prod = await suite.server.createApp({ environment: 'production' });
    const refused = await prod.rest('PATCH', `/v1/applications/${prod.id}`, {
      settings: { branding: { logo_url: 'http://cdn.example.com/logo.png' } },
    });
    expectError(refused, 422, 'invalid_url');
    expect(refused.body.error.details?.map((d) => d.path)).toContain('settings.branding.logo_url');
    const https = await ok(
      prod.rest('PATCH', `/v1/applications/${prod.id}`, {
        settings: { branding: { logo_url: 'https://cdn.example.com/logo.png' } },
      }),
    );
    expect(https.settings.branding.logo_url).toBe('https://cdn.example.com/logo.png');
  });

  it('needs settings:write to change and settings:read to read, and answers 404 for another application', async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    const reader = await scopedKey(app, ['settings:read']);
    const refused = await app.rest(
      'PATCH',
      `/v1/applications/${app.id}`,
      { settings: { branding: { theme: 'dark' } } },
      bearer(reader),
    );
    expectError(refused, 403, 'insufficient_scope');
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}`, undefined, bearer(reader)))).settings.branding.theme).toBe(
      'auto',
    );
    const noRead = await scopedKey(app, ['users:read']);
    expectError(await app.rest('GET', `/v1/applications/${app.id}`, undefined, bearer(noRead)), 403, 'insufficient_scope');
    expectError(
      await app.rest('PATCH', `/v1/applications/${other.id}`, { settings: { branding: { theme: 'dark' } } }),
      404,
      'not_found',
    );
    expect((await ok(other.rest('GET', `/v1/applications/${other.id}`))).settings.branding.theme).toBe('auto');
  });

  it('are described in the OpenAPI document', async () => {
    const res = await fetch(`${suite.server.url}/v1/openapi.json`);
    const doc = await res.json();
    const settings = doc.components.schemas.ApplicationSettings;
    expect(Object.keys(settings.properties)).toEqual(expect.arrayContaining(['branding', 'sign_in']));
    const branding = JSON.stringify(settings.properties.branding);
    for (const field of ['display_name', 'logo_url', 'primary_color', 'theme', 'support_email'])
      expect(branding).toContain(field);
  });
});

/** A real 1×1 PNG, and files that begin as each other type does (only the first bytes are checked). */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=', 'base64');
const GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const JPEG = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from('\x00\x10JFIF\x00\x01\x01\x00', 'latin1')]);
const WEBP = Buffer.concat([Buffer.from('RIFF', 'latin1'), Buffer.from([26, 0, 0, 0]), Buffer.from('WEBPVP8L', 'latin1')]);
const SVG = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><script>alert(2)</script></svg>');
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
const upload = (bytes: Buffer, content_type = 'image/png') => ({ content_type, data: bytes.toString('base64') });

describe('uploaded logo', () => {
  const logoOf = (id: string, query = '', headers: Record<string, string> = {}) =>
    fetch(`${suite.server.url}/a/${id}/logo${query}`, { headers });

  it('is stored, pointed at by settings.branding.logo_url, and served with safe headers', async () => {
    const app = await suite.server.createApp();
    const v = sha256(PNG).slice(0, 12);
    const put = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG));
    const data = await ok(put);
    const url = `http://gatehouse.test/a/${app.id}/logo?v=${v}`;
    expect(data).toEqual({
      application_id: app.id,
      logo_url: url,
      content_type: 'image/png',
      size: PNG.length,
      sha256: sha256(PNG),
      updated_at: isoDate,
    });
    const read = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(read.settings.branding).toEqual({ ...DEFAULT_BRANDING, logo_url: url });

    const served = await logoOf(app.id, `?v=${v}`);
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(PNG)).toBe(true);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(served.headers.get('x-content-type-options')).toBe('nosniff');
    expect(served.headers.get('content-security-policy')).toBe("default-src 'none'; sandbox");
    expect(served.headers.get('etag')).toBe(`"${sha256(PNG)}"`);
    expect(served.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    // Without the version, or with another one, the answer may change: revalidated after five minutes.
    for (const query of ['', '?v=000000000000', `?v=${v}&v=${v}`]) {
      const unversioned = await logoOf(app.id, query);
      expect(unversioned.status, query).toBe(200);
      expect(unversioned.headers.get('cache-control'), query).toBe('public, max-age=300');
    }
  });

  it('answers 304 to a matching If-None-Match, strong or weak, and the bytes to any other', async () => {
    const app = await suite.server.createApp();
    await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(GIF, 'image/gif')));
    const etag = `"${sha256(GIF)}"`;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await logoOf(app.id, '', { 'if-none-match': header });
      expect(res.status, header).toBe(304);
      expect(await res.text(), header).toBe('');
      expect(res.headers.get('etag'), header).toBe(etag);
    }
    for (const header of ['"other"', `${etag.slice(0, -2)}"`, sha256(GIF)]) {
      const res = await logoOf(app.id, '', { 'if-none-match': header });
      expect(res.status, header).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/gif');
    }
  });

  it('takes PNG, JPEG, WebP and GIF, each served as its type; a new upload replaces the old', async () => {
    const app = await suite.server.createApp();
    for (const [bytes, type] of [
      [PNG, 'image/png'],
      [JPEG, 'image/jpeg'],
      [WEBP, 'image/webp'],
      [GIF, 'image/gif'],
    ] as const) {
      const data = await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(bytes, type)));
      expect(data.logo_url).toBe(`http://gatehouse.test/a/${app.id}/logo?v=${sha256(bytes).slice(0, 12)}`);
      const served = await logoOf(app.id);
      expect(served.headers.get('content-type')).toBe(type);
      expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    }
    const rows = await sql(suite.server, 'select count(*)::int as n from application_logos where application_id = ?', [app.id]);
    expect(rows[0].n).toBe(1);
  });

  it('takes exactly 256 KiB and refuses one byte more (422 at data: a field over its limit, the body is not)', async () => {
    const app = await suite.server.createApp();
    const largest = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(256 * 1024 - 8, 7)]);
    const data = await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(largest)));
    expect(data.size).toBe(256 * 1024);
    for (const bytes of [Buffer.concat([largest, Buffer.from([1])]), Buffer.concat([largest, Buffer.alloc(3)])]) {
      const res = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(bytes));
      expectError(res, 422, 'validation_failed');
      expect(res.body.error.details).toEqual([{ path: 'data', message: expect.stringContaining('256 KiB') }]);
    }
    // A body over the server's 1 MiB is refused before it is read: 413.
    const huge = Buffer.concat([PNG.subarray(0, 8), Buffer.alloc(800 * 1024)]);
    expectError(await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(huge)), 413, 'payload_too_large');
    // The stored logo is still the one that fitted.
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}`))).settings.branding.logo_url).toBe(data.logo_url);
  });

  it('refuses bad base64, SVG, and bytes that are not the declared type (422, nothing stored)', async () => {
    const app = await suite.server.createApp();
    const b64 = PNG.toString('base64');
    const cases: Array<[unknown, string]> = [
      [{ content_type: 'image/png', data: '!!!!' }, 'data'],
      [{ content_type: 'image/png', data: b64.slice(0, -1) }, 'data'],
      [{ content_type: 'image/png', data: `${b64.slice(0, 20)}\n${b64.slice(20)}` }, 'data'],
      [{ content_type: 'image/png', data: PNG.toString('base64url').replace(/=+$/, '') }, 'data'],
      [{ content_type: 'image/png', data: `${b64}====` }, 'data'],
      [{ content_type: 'image/png', data: '' }, 'data'],
      [{ content_type: 'image/png', data: 42 }, 'data'],
      [{ content_type: 'image/png' }, 'data'],
      [{ data: b64 }, 'content_type'],
      [upload(SVG, 'image/svg+xml'), 'content_type'],
      [upload(PNG, 'image/PNG'), 'content_type'],
      [upload(PNG, 'text/html'), 'content_type'],
      [upload(SVG), 'data'],
      [upload(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), SVG])), 'data'],
      [upload(Buffer.from('<!doctype html><script>alert(1)</script>')), 'data'],
      [upload(PNG, 'image/gif'), 'data'],
      [upload(GIF, 'image/png'), 'data'],
      [upload(JPEG, 'image/webp'), 'data'],
      [upload(Buffer.from('RIFF\x00\x00\x00\x00WAVEfmt ', 'latin1'), 'image/webp'), 'data'],
      [upload(PNG.subarray(0, 7)), 'data'],
      [upload(Buffer.from([0xff, 0xd8]), 'image/jpeg'), 'data'],
      [{ ...upload(PNG), url: 'https://x.example' }, '(root)'],
    ];
    for (const [body, path] of cases) {
      const res = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, body);
      const label = JSON.stringify(body).slice(0, 120);
      expectError(res, 422, 'validation_failed', label);
      expect(
        res.body.error.details?.map((d) => d.path),
        label,
      ).toContain(path);
    }
    const svg = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(SVG));
    expect(svg.body.error.details?.[0]?.message).toMatch(/markup/);
    const mismatch = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG, 'image/gif'));
    expect(mismatch.body.error.details?.[0]?.message).toBe('the bytes are image/png, not image/gif');
    expect((await logoOf(app.id)).status).toBe(404);
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}`))).settings.branding.logo_url).toBeNull();
  });

  it("is 404 for another application's id, and needs settings:write", async () => {
    const app = await suite.server.createApp();
    const other = await suite.server.createApp();
    await ok(other.rest('PUT', `/v1/applications/${other.id}/branding/logo`, upload(GIF, 'image/gif')));
    expectError(await app.rest('PUT', `/v1/applications/${other.id}/branding/logo`, upload(PNG)), 404, 'not_found');
    expectError(await app.rest('DELETE', `/v1/applications/${other.id}/branding/logo`), 404, 'not_found');
    // The other application's logo is untouched.
    expect((await logoOf(other.id)).headers.get('content-type')).toBe('image/gif');

    const reader = await scopedKey(app, ['settings:read']);
    expectError(
      await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG), bearer(reader)),
      403,
      'insufficient_scope',
    );
    expectError(
      await app.rest('DELETE', `/v1/applications/${app.id}/branding/logo`, undefined, bearer(reader)),
      403,
      'insufficient_scope',
    );
    expectError(
      await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG), { authorization: undefined }),
      401,
      'missing_credentials',
    );
    expect((await logoOf(app.id)).status).toBe(404);
  });

  it('GET answers 404 in the envelope for an unknown application, a malformed id, or no uploaded logo', async () => {
    const linked = await suite.server.createApp({ settings: { branding: { logo_url: 'https://cdn.example.com/l.png' } } });
    for (const id of [MISSING, 'not-a-uuid', linked.id, `${linked.id.slice(0, -1)}x`]) {
      const res = await rawRequest(suite.server.url, 'GET', `/a/${id}/logo`);
      expectError(res, 404, 'not_found', id);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it('DELETE removes it (bytes and URL), then answers 404; it also clears a linked logo', async () => {
    const app = await suite.server.createApp();
    await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG)));
    expect(await ok(app.rest('DELETE', `/v1/applications/${app.id}/branding/logo`))).toEqual({ id: app.id, deleted: true });
    expect((await logoOf(app.id)).status).toBe(404);
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}`))).settings.branding).toEqual(DEFAULT_BRANDING);
    expectError(await app.rest('DELETE', `/v1/applications/${app.id}/branding/logo`), 404, 'not_found');

    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, {
        settings: { branding: { logo_url: 'https://cdn.example.com/l.png', theme: 'dark' } },
      }),
    );
    await ok(app.rest('DELETE', `/v1/applications/${app.id}/branding/logo`));
    expect((await ok(app.rest('GET', `/v1/applications/${app.id}`))).settings.branding).toEqual({
      ...DEFAULT_BRANDING,
      theme: 'dark',
    });
  });

  it('a PATCH that keeps the served URL keeps the bytes; one that sets another URL (or null) drops them', async () => {
    const app = await suite.server.createApp({ environment: 'production' });
    const { logo_url } = await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG)));
    // The test server's base URL is http: the stored URL is kept as it is, even in a production application.
    await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding: { logo_url, theme: 'light' } } }));
    await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { sign_up: 'closed' } }));
    expect((await logoOf(app.id)).status).toBe(200);

    await ok(
      app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding: { logo_url: 'https://cdn.example.com/l.png' } } }),
    );
    expect((await logoOf(app.id)).status).toBe(404);
    const rows = await sql(suite.server, 'select count(*)::int as n from application_logos where application_id = ?', [app.id]);
    expect(rows[0].n).toBe(0);

    await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(GIF, 'image/gif')));
    await ok(app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { branding: { theme: 'dark' } } }));
    expect((await logoOf(app.id)).status).toBe(404);
  });

  it('honours an Idempotency-Key: the same upload replays, another body with the key is refused', async () => {
    const app = await suite.server.createApp();
    const key = { 'idempotency-key': `logo-${app.id}` };
    const first = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG), key);
    const again = await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG), key);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expectError(
      await app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(GIF, 'image/gif'), key),
      422,
      'idempotency_key_reused',
    );
    expect((await logoOf(app.id)).headers.get('content-type')).toBe('image/png');
  });

  it('ten concurrent uploads leave one logo, the one settings.branding.logo_url names', async () => {
    const app = await suite.server.createApp();
    const images = Array.from({ length: 10 }, (_, i) => Buffer.concat([PNG, Buffer.from([i])]));
    const results = await Promise.all(
      images.map((bytes) => app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(bytes))),
    );
    for (const res of results) expect(res.status, JSON.stringify(res.body)).toBe(200);
    const rows = await sql(suite.server, 'select sha256 from application_logos where application_id = ?', [app.id]);
    expect(rows).toHaveLength(1);
    const { settings } = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(settings.branding.logo_url).toBe(`http://gatehouse.test/a/${app.id}/logo?v=${rows[0].sha256.slice(0, 12)}`);
    const served = await logoOf(app.id);
    expect(sha256(Buffer.from(await served.arrayBuffer()))).toBe(rows[0].sha256);
  });

  it("moves the application's updated_at, and answers HEAD with the headers and no body", async () => {
    const app = await suite.server.createApp();
    const before = app.application.updated_at;
    await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG)));
    const after = await ok(app.rest('GET', `/v1/applications/${app.id}`));
    expect(Date.parse(after.updated_at)).toBeGreaterThan(Date.parse(before));
    const head = await fetch(`${suite.server.url}/a/${app.id}/logo`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('image/png');
    expect(head.headers.get('etag')).toBe(`"${sha256(PNG)}"`);
    expect(await head.text()).toBe('');
  });

  it('goes with its application', async () => {
    const app = await suite.server.createApp();
    await ok(app.rest('PUT', `/v1/applications/${app.id}/branding/logo`, upload(PNG)));
    await rawRequest(suite.server.url, 'DELETE', `/v1/applications/${app.id}`, {
      headers: { authorization: `Bearer ${suite.server.operatorToken}` },
    });
    expect((await logoOf(app.id)).status).toBe(404);
  });
});

describe('through the SDK', () => {
  it('sets branding and sign-in settings, uploads and removes the logo, with typed errors', async () => {
    const app = await suite.server.createApp();
    const updated = await app.sdk.applications.update({
      id: app.id,
      settings: { branding: { display_name: 'SDK app', primary_color: '#ABCDEF' }, sign_in: { magic_link: false } },
    });
    expect(updated.settings.branding).toEqual({ ...DEFAULT_BRANDING, display_name: 'SDK app', primary_color: '#abcdef' });
    expect(updated.settings.sign_in).toEqual({ magic_link: false, passkeys: true });

    const logo = await app.sdk.applications.branding.setLogo({
      id: app.id,
      content_type: 'image/png',
      data: PNG.toString('base64'),
    });
    expect(logo).toMatchObject({ content_type: 'image/png', size: PNG.length, sha256: sha256(PNG) });
    expect((await app.sdk.applications.get({ id: app.id })).settings.branding.logo_url).toBe(logo.logo_url);

    const svg = await rejection(
      app.sdk.applications.branding.setLogo({ id: app.id, content_type: 'image/png', data: SVG.toString('base64') }),
    );
    expect([svg.code, svg.status]).toEqual(['validation_failed', 422]);
    expect(svg.details?.map((d) => d.path)).toEqual(['data']);

    expect(await app.sdk.applications.branding.removeLogo({ id: app.id })).toEqual({ id: app.id, deleted: true });
    const gone = await rejection(app.sdk.applications.branding.removeLogo({ id: app.id }));
    expect([gone.code, gone.status]).toEqual(['not_found', 404]);
  });
});
