import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, hasChromium, launchChromium } from './helpers/browser.ts';
import {
  addOperator,
  CONSOLE_ORIGIN,
  checkConsolePage,
  signInWithLink,
  stepUpWithTotp,
  watchConsolePage,
} from './helpers/console.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { createTestIdp, makeKeyPair } from './helpers/saml-idp.ts';
import { ok, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The console's sign-in section in Debian's Chromium, served by the server at /console with its CSP: an owner signs in
 * with the one-time link, sees the empty SSO page, steps up with an authenticator app, creates a SAML connection from
 * an IdP metadata file (a real samlify IdP's), reads and copies the values for the IdP, disables and enables it, edits
 * it with the IdP's PEM certificate, sees a certificate near its expiry flagged and deletes that connection; configures
 * a social provider (its secret never shown back); creates an OAuth client and sees its secret once. axe-core checks
 * each page in light and dark; screenshots go to apps/server/test-artifacts/console/.
 */
if (!hasChromium) console.warn('browser-console-sso: /usr/bin/chromium not found, the real-browser test is skipped.');

describe.runIf(browserRun)('the console’s SSO connections, social providers and OAuth clients in Chromium', () => {
  let server: TestServer;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({ baseUrl: CONSOLE_ORIGIN });
    app = await server.createApp({ name: 'Console SSO' });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('an owner creates a SAML connection from metadata, configures a social provider and creates an OAuth client', async () => {
    const operator = await addOperator(server, uniqueEmail('console-sso'), 'owner', null);
    const page = await browser.context.newPage();
    const errors = watchConsolePage(page);
    const clipboard = () => page.evaluate(() => navigator.clipboard.readText());
    try {
      await signInWithLink(page, operator.link);

      // The application's nav has one "Sign-in" entry; it opens the SSO connections, with the CLI and curl to start.
      await page.goto(`${CONSOLE_ORIGIN}/console/apps/${app.id}/dashboard`);
      await page.getByRole('navigation', { name: 'Application' }).getByRole('link', { name: 'Sign-in' }).click();
      await page.waitForURL(`${CONSOLE_ORIGIN}/console/apps/${app.id}/sign-in/sso`);
      await page.getByRole('heading', { level: 1, name: 'SSO connections' }).waitFor();
      await page.getByText('No SSO connection').waitFor();
      expect(await page.getByRole('navigation', { name: 'Sign-in' }).getByRole('link').allTextContents()).toEqual([
        'SSO connections',
        'Social providers',
        'OAuth clients',
      ]);
      await checkConsolePage(page, 'sso-empty');

      // Writes need the second factor.
      await stepUpWithTotp(server, page, operator.userId, `/console/apps/${app.id}/sign-in/sso`);
      await page.getByRole('heading', { level: 1, name: 'SSO connections' }).waitFor();

      // A connection from the IdP's metadata file, read in the browser.
      const idp = await createTestIdp();
      await page
        .getByLabel("The IdP's metadata file (XML)")
        .setInputFiles({ name: 'idp-metadata.xml', mimeType: 'application/xml', buffer: Buffer.from(idp.metadataXml) });
      await page.getByLabel('Name', { exact: true }).fill('Acme');
      await page.getByLabel('Email domain').fill('acme.example');
      await page.getByRole('button', { name: 'Add the connection' }).click();
      await page.waitForURL(new RegExp(`/console/apps/${app.id}/sign-in/sso/[0-9a-f-]{36}$`));
      const connectionId = new URL(page.url()).pathname.split('/').pop() ?? '';
      await page.getByRole('heading', { level: 1, name: /Acme/ }).waitFor();
      const stored = await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`));
      expect(stored).toMatchObject({ name: 'Acme', idp_entity_id: idp.entityId, email_domain: 'acme.example', enabled: true });

      // The values for the IdP, each with a copy button: the ACS URL lands on the clipboard.
      const forIdp = page.getByRole('region', { name: 'Give these to the IdP' });
      expect(await forIdp.textContent()).toContain(`${CONSOLE_ORIGIN}/v1/saml/metadata/${connectionId}`);
      await forIdp.getByRole('button', { name: 'Copy the ACS URL (Reply URL)' }).click();
      await forIdp.getByText('Copied').waitFor();
      expect(await clipboard()).toBe(`${CONSOLE_ORIGIN}/v1/saml/acs/${connectionId}`);
      expect(stored.acs_url).toBe(`${CONSOLE_ORIGIN}/v1/saml/acs/${connectionId}`);
      await checkConsolePage(page, 'sso-connection');

      // Disable, then enable: the server's record follows.
      await page.getByRole('button', { name: 'Disable the connection' }).click();
      await page.getByText('This connection is disabled').waitFor();
      expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).enabled).toBe(false);
      await page.getByRole('button', { name: 'Enable the connection' }).click();
      await page.getByRole('button', { name: 'Disable the connection' }).waitFor();
      expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).enabled).toBe(true);

      // Edit (the URL holds it): the certificate is sent again, as the IdP administrator exports it (PEM).
      await page.getByRole('link', { name: 'Edit' }).click();
      await page.waitForURL(/edit=true/);
      await page.getByLabel('IdP signing certificate').fill(idp.keys.certificatePem);
      await page.getByLabel('Email domain').fill('acme-corp.example');
      await page.getByRole('button', { name: 'Save the connection' }).click();
      await page.waitForURL((url) => !url.search.includes('edit'));
      expect((await ok(app.rest('GET', `/v1/saml/connections/${connectionId}`))).email_domain).toBe('acme-corp.example');

      // A connection whose certificate expires in 10 days is flagged in the list; the list's own toggle works too.
      const soon = await makeKeyPair(2048, 10);
      const expiring = await ok(
        app.rest('POST', '/v1/saml/connections', {
          name: 'Soon expiring',
          idp_entity_id: 'https://idp.soon.example/saml',
          idp_sso_url: 'https://idp.soon.example/saml/sso',
          idp_certificate: soon.certificate,
        }),
        201,
      );
      await page.getByRole('link', { name: '← All SSO connections' }).click();
      await page.getByRole('heading', { level: 1, name: 'SSO connections' }).waitFor();
      const soonRow = page.getByRole('row', { name: /Soon expiring/ });
      await soonRow.getByText(/expires in (9|10) days/).waitFor();
      const acmeRow = page.getByRole('row', { name: /Acme/ });
      expect(await acmeRow.textContent()).toContain('acme-corp.example');
      expect(await acmeRow.textContent()).not.toContain('expires in');
      await soonRow.getByRole('button', { name: 'Disable Soon expiring' }).click();
      await soonRow.getByText('disabled').waitFor();
      await checkConsolePage(page, 'sso-connections');

      // Delete, with its confirmation.
      await soonRow.getByRole('link', { name: 'Soon expiring' }).click();
      await page.getByRole('button', { name: 'Delete Soon expiring' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Delete the connection' }).click();
      await page.waitForURL(`${CONSOLE_ORIGIN}/console/apps/${app.id}/sign-in/sso`);
      // Gone from the list at once: the list never shows it again, not even from its cache before the refetch.
      await page.getByRole('row', { name: /Acme/ }).waitFor();
      expect(await page.getByRole('row', { name: /Soon expiring/ }).count()).toBe(0);
      expect((await app.rest('GET', `/v1/saml/connections/${expiring.id}`)).status).toBe(404);

      // A social provider: client id and secret; the secret is never shown back.
      await page.getByRole('navigation', { name: 'Sign-in' }).getByRole('link', { name: 'Social providers' }).click();
      await page.getByRole('heading', { level: 1, name: 'Social providers' }).waitFor();
      await page.getByText('No provider configured yet').waitFor();
      await page.getByRole('link', { name: 'Configure GitHub' }).click();
      await page.waitForURL(/provider=github/);
      const secret = 'gh-secret-never-shown-0123456789';
      await page.getByLabel('Client id').fill('Iv1.console-test');
      await page.getByLabel('Client secret').fill(secret);
      await checkConsolePage(page, 'social-providers-configure');
      await page.getByRole('button', { name: 'Save GitHub' }).click();
      await page.waitForURL((url) => !url.search.includes('provider'));
      const github = page.getByRole('row', { name: /^GitHub/ });
      await github.getByText('enabled').waitFor();
      expect(await github.textContent()).toContain('Iv1.console-test');
      expect(await github.textContent()).toContain('stored');
      expect(await page.content()).not.toContain(secret);
      const providers = await ok(app.rest('GET', `/v1/applications/${app.id}/providers/oauth`));
      expect(providers.find((p: { provider: string }) => p.provider === 'github')).toMatchObject({
        client_id: 'Iv1.console-test',
        enabled: true,
        has_secret: true,
      });
      // Opening it again shows the client id, never the secret.
      await github.getByRole('link', { name: 'Configure GitHub' }).click();
      expect(await page.getByLabel('Client id').inputValue()).toBe('Iv1.console-test');
      expect(await page.getByLabel('Client secret').inputValue()).toBe('');
      await page.getByText('A secret is stored; it is never shown.').waitFor();
      await checkConsolePage(page, 'social-providers');

      // An OAuth client of the application's OpenID provider: its secret is shown once, with a copy button.
      await page.getByRole('navigation', { name: 'Sign-in' }).getByRole('link', { name: 'OAuth clients' }).click();
      await page.getByRole('heading', { level: 1, name: 'OAuth clients' }).waitFor();
      await page.getByText('No OAuth client').waitFor();
      await page.getByLabel('Name', { exact: true }).fill('Partner app');
      await page.getByLabel('Redirect URIs', { exact: true }).fill('https://partner.example/callback');
      await page.getByLabel('Post-logout redirect URIs').fill('https://partner.example/');
      await page.getByRole('button', { name: 'Add the client' }).click();
      await page.getByText('Copy its secret now: it is never shown again.').waitFor();
      const [client] = await ok(app.rest('GET', '/v1/oauth2/clients'));
      expect(client).toMatchObject({
        name: 'Partner app',
        type: 'confidential',
        redirect_uris: ['https://partner.example/callback'],
        post_logout_redirect_uris: ['https://partner.example/'],
      });
      await page.getByRole('button', { name: 'Copy the client secret' }).click();
      const clientSecret = await clipboard();
      expect(clientSecret.length).toBeGreaterThan(20);
      expect(await page.content()).toContain(clientSecret);
      await page.getByRole('row', { name: /Partner app/ }).waitFor();
      await checkConsolePage(page, 'oauth-clients');
      // Once: the page opened again lists the client without its secret.
      await page.reload();
      await page.getByRole('row', { name: /Partner app/ }).waitFor();
      expect(await page.content()).not.toContain(clientSecret);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
