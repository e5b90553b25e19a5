import { describe, expect, it } from 'vitest';
import { bearer, scopedKey } from './helpers/fixtures.ts';
import { expectError, ok, sql } from './helpers/server.ts';
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
