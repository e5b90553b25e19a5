import type { CDPSession, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addVirtualAuthenticator, type Browser, hasChromium, launchChromium, screenshot } from './helpers/browser.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { startServer, type TestApp, type TestServer } from './helpers/server.ts';
import type { SmtpSink } from './helpers/sign-in.ts';
import { linkIn, startSmtpSink } from './helpers/smtp.ts';

/**
 * Passkeys on the hosted pages in Debian's Chromium with a CDP virtual authenticator: add one on the account page,
 * sign out, sign in by autofill (conditional mediation on the email field) and by the button, then the passkey as
 * the second factor of a magic link, and remove it. WebAuthn needs a secure context, so the server's base URL is
 * `http://localhost` (a secure context, rp id `localhost`), mapped by Chromium's resolver rules to the test server.
 * Screenshots of each state go to apps/server/test-artifacts/.
 */
if (!hasChromium) console.warn('browser-hosted-passkeys: /usr/bin/chromium not found, the real-browser test is skipped.');

const ORIGIN = 'http://localhost';

describe.runIf(browserRun)('passkeys on the hosted pages in Chromium', () => {
  let smtp: SmtpSink;
  let server: TestServer;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    smtp = await startSmtpSink();
    server = await startServer({ smtpUrl: smtp.url, baseUrl: ORIGIN });
    app = await server.createApp({ name: 'Passkey Notes', allowed_origins: [ORIGIN] });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await smtp?.close();
  });

  const base = () => `${ORIGIN}/a/${app.id}`;
  const shot = (page: Page, name: string) => screenshot(page, `hosted-passkeys-${name}`);

  async function virtualAuthenticator(page: Page) {
    const cdp: CDPSession = await browser.context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    return { cdp, authenticatorId: await addVirtualAuthenticator(cdp) };
  }

  /** The magic link in this page: the email form, the mail, the link's button. */
  async function magicLink(page: Page, email: string) {
    await page.goto(`${base()}/sign-in`);
    await page.fill('#email', email);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByText('Check your email').waitFor();
    const link = linkIn(await smtp.next(email));
    expect(link.origin).toBe(ORIGIN);
    await page.goto(link.toString());
    await page.getByRole('button', { name: 'Yes, sign me in' }).click();
  }

  async function signOut(page: Page) {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You are signed out of Passkey Notes.').waitFor();
  }

  it('adds a passkey on the account page, signs in by autofill and by the button, uses it as the second factor, removes it', async () => {
    const page = await browser.context.newPage();
    const { cdp, authenticatorId } = await virtualAuthenticator(page);
    const email = uniqueEmail('hosted-chromium');
    try {
      // The sign-in page: the script shows the passkey box (WebAuthn is there).
      await page.goto(`${base()}/sign-in`);
      await page.locator('#passkey').waitFor({ state: 'visible' });
      await shot(page, '1-sign-in');

      // Signed in by magic link: the account page offers "Add a passkey".
      await magicLink(page, email);
      await page.getByText(`Signed in as ${email}`).waitFor();
      await page.getByText('You have no passkey yet.').waitFor();
      await shot(page, '2-account-no-passkey');
      await page.getByRole('button', { name: 'Add a passkey' }).click();
      await page.getByText('Passkey added.').waitFor();
      expect(page.url()).toBe(`${base()}/account?passkeys=added`);
      expect(await page.locator('.passkeys li').count()).toBe(1);
      const { credentials } = await cdp.send('WebAuthn.getCredentials', { authenticatorId });
      expect(credentials).toHaveLength(1);
      expect(credentials[0]).toMatchObject({ isResidentCredential: true, rpId: 'localhost' });
      await shot(page, '3-account-passkey-added');
      expect((await smtp.next(email)).subject).toMatch(/^A passkey was added/);
      await signOut(page);

      // Autofill: on load the page starts a conditional request on the email field; the virtual authenticator answers
      // it as a person picking the passkey from the autofill would, and the page signs in without a click.
      await page.goto(`${base()}/sign-in`);
      await page.getByText(`Signed in as ${email}`).waitFor();
      expect(page.url()).toBe(`${base()}/account`);
      await signOut(page);

      // The button, in a browser without conditional mediation (no autofill request on load).
      await page.addInitScript(() => {
        PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
      });
      await page.goto(`${base()}/sign-in`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
      await shot(page, '4-sign-in-button');
      expect(page.url()).toBe(`${base()}/sign-in`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByText(`Signed in as ${email}`).waitFor();
      expect(page.url()).toBe(`${base()}/account`);
      await signOut(page);

      // A magic link now stops at the second factor; the passkey completes it (aal 2: it may remove the passkey).
      await magicLink(page, email);
      await page.getByRole('button', { name: 'Use your passkey' }).waitFor();
      await shot(page, '5-second-factor');
      await page.getByRole('button', { name: 'Use your passkey' }).click();
      await page.getByText(`Signed in as ${email}`).waitFor();
      expect(page.url()).toBe(`${base()}/account`);
      await page.getByRole('button', { name: /^Remove the passkey/ }).click();
      await page.getByText('Passkey removed.').waitFor();
      await page.getByText('You have no passkey yet.').waitFor();
      await shot(page, '6-account-passkey-removed');
      expect((await smtp.next(email)).subject).toMatch(/^A passkey was removed/);

      // The authenticator still holds the credential; the server no longer takes it: the page says so.
      await signOut(page);
      await page.goto(`${base()}/sign-in`);
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByText('This passkey was not accepted').waitFor();
      expect(page.url()).toBe(`${base()}/passkeys/sign-in`);
      await shot(page, '7-sign-in-refused');
    } finally {
      await page.close();
    }
  });
});
