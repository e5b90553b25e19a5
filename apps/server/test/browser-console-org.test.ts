import { randomBytes } from 'node:crypto';
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
import { type LocalDns, startLocalDns } from './helpers/dns.ts';
import { createOrg, createUser, uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { ok, rawRequest, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * An organization's enterprise set-up in the console, in Debian's Chromium, served by the server at /console with its
 * CSP: an owner operator opens an organization (members), steps up, invites an address (listed pending, then revoked),
 * subscribes the organization to a plan (seats used of the limit), claims a domain (its TXT record, verified through a
 * local DNS server, its join policy set), creates a SCIM directory (its token shown once, and a SCIM request with it
 * answers 200; rotated, the old one is refused and the new one works) and an admin portal link. axe-core checks every
 * tab (WCAG 2.1 A/AA) in the light and the dark scheme; screenshots go to apps/server/test-artifacts/console/.
 */
if (!hasChromium) console.warn('browser-console-org: /usr/bin/chromium not found, the real-browser test is skipped.');

describe.runIf(browserRun)('the console’s organization tabs in Chromium', () => {
  let server: TestServer;
  let dns: LocalDns;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    dns = await startLocalDns();
    server = await startServer({ baseUrl: CONSOLE_ORIGIN, dnsServers: [dns.address] });
    app = await server.createApp({ name: 'Console Enterprise' });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
    await browser.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await dns?.close();
  });

  it('an owner invites, subscribes, claims a domain, creates a directory whose token works, and a portal link', async () => {
    const org = await createOrg(app, { name: 'Initech' });
    const member = await createUser(app, { primary_email: uniqueEmail('peter') });
    await ok(app.rest('POST', `/v1/organizations/${org.id}/members`, { user_id: member.id, role: 'admin' }), 201);
    await ok(
      app.rest('POST', '/v1/billing/plans', {
        key: 'team',
        name: 'Team',
        interval: 'month',
        currency: 'usd',
        price_cents: 2900,
        per_seat_cents: 900,
      }),
      201,
    );
    const orgPath = `/console/apps/${app.id}/organizations/${org.id}`;

    const operator = await addOperator(server, uniqueEmail('org-operator'), 'owner', null);
    const page = await browser.context.newPage();
    const errors = watchConsolePage(page);
    try {
      await signInWithLink(page, operator.link);
      // Writes need the second factor: step up once, back on the organization's page (its members tab).
      await stepUpWithTotp(server, page, operator.userId, orgPath);
      await page.getByRole('heading', { level: 1, name: 'Initech' }).waitFor();
      const tabs = page.getByRole('tablist', { name: 'About this organization' });
      expect(await tabs.getByRole('tab', { name: 'Members' }).getAttribute('aria-selected')).toBe('true');
      await page.getByRole('row', { name: /peter/ }).waitFor();
      await checkConsolePage(page, 'org-members');

      // A member's role, changed in place: saved only once it differs.
      const role = page.getByRole('textbox', { name: /^Role of peter/ });
      expect(await role.inputValue()).toBe('admin');
      const save = page.getByRole('button', { name: /^Save the role of peter/ });
      expect(await save.isDisabled()).toBe(true);
      await role.fill('member');
      await save.click();
      await page.getByText(/^peter.* is now member\.$/).waitFor();
      const members = await ok(app.rest('GET', `/v1/organizations/${org.id}/members`));
      expect(members.members.map((m: { user_id: string; role: string }) => [m.user_id, m.role])).toEqual([[member.id, 'member']]);

      // Invitations: the empty state; an invitation listed pending, then revoked. The tab is in the URL.
      await tabs.getByRole('tab', { name: 'Invitations' }).click();
      await page.waitForURL(/tab=invitations/);
      await page.getByText('No invitation yet').waitFor();
      await checkConsolePage(page, 'org-invitations-empty');
      const invited = uniqueEmail('grace');
      await page.getByLabel('Email').fill(invited);
      await page.getByLabel('Role', { exact: true }).fill('member');
      await page.getByLabel('Expires after (days)').fill('3');
      await page.getByRole('button', { name: 'Send the invitation' }).click();
      await page.getByText(`Invitation mailed to ${invited}`).waitFor();
      const row = page.getByRole('row', { name: new RegExp(invited.replace(/[.+]/g, '\\$&')) });
      await row.getByText('pending', { exact: true }).waitFor();
      await checkConsolePage(page, 'org-invitations');
      await row.getByRole('button', { name: `Revoke the invitation of ${invited}` }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke the invitation' }).click();
      await row.getByText('revoked', { exact: true }).waitFor();
      const [invitation] = (await ok(app.rest('GET', `/v1/organizations/${org.id}/invitations`))).invitations;
      expect(invitation).toMatchObject({ email: invited, status: 'revoked' });
      // The filter is in the URL too.
      await page.getByRole('radiogroup', { name: 'Show' }).getByText('pending', { exact: true }).click();
      await page.waitForURL(/status=pending/);
      await page.getByText('No pending invitation').waitFor();

      // Subscription and seats: none yet; subscribe to the plan with 3 seats, 1 of them used.
      await tabs.getByRole('tab', { name: 'Subscription and seats' }).click();
      await page.waitForURL(/tab=subscription/);
      expect(new URL(page.url()).searchParams.get('status')).toBeNull();
      await page.getByText('No live subscription').waitFor();
      await page.getByText(/^Team \(team\)/).click();
      await page.getByLabel('Seats', { exact: true }).fill('3');
      await page.getByRole('button', { name: 'Subscribe' }).click();
      await page.getByText('1 used of 3').waitFor();
      await checkConsolePage(page, 'org-subscription');
      await page.getByLabel('Seats', { exact: true }).fill('5');
      await page.getByRole('button', { name: 'Save the subscription' }).click();
      await page.getByText('1 used of 5').waitFor();
      expect((await ok(app.rest('GET', `/v1/organizations/${org.id}`))).subscription).toMatchObject({ seats: 5 });

      // Domains: claim one, its TXT record shown; published on the DNS server, "Verify now" verifies it; a policy set.
      await tabs.getByRole('tab', { name: 'Domains' }).click();
      await page.waitForURL(/tab=domains/);
      await page.getByText('No domain yet').waitFor();
      await checkConsolePage(page, 'org-domains-empty');
      const domain = `initech-${randomBytes(4).toString('hex')}.gatehouse-test.dev`;
      await page.getByLabel('Domain', { exact: true }).fill(domain);
      await page.getByRole('button', { name: 'Claim the domain' }).click();
      const claim = page.getByRole('article', { name: new RegExp(domain.replaceAll('.', '\\.')) });
      await claim.getByText('pending verification').waitFor();
      const [record] = await ok(app.rest('GET', `/v1/organizations/${org.id}/domains`));
      expect(await claim.getByRole('row').nth(1).textContent()).toContain(record.verification.value);
      await claim.getByText(`_gatehouse-challenge.${domain}`).waitFor();
      await checkConsolePage(page, 'org-domains-pending');
      await claim.getByRole('button', { name: `Copy the record value for ${domain}` }).click();
      await claim.getByText('Copied').waitFor();
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(record.verification.value);
      dns.zone[record.verification.name] = { txt: [record.verification.value] };
      await claim.getByRole('button', { name: `Verify now: ${domain}` }).click();
      await claim.getByText(`${domain} is verified.`).waitFor();
      await claim.getByText(/^Anyone with a verified email/).click();
      await claim.getByRole('button', { name: 'Save the policies' }).click();
      await expect
        .poll(async () => (await ok(app.rest('GET', `/v1/organizations/${org.id}/domains`)))[0].join_policy)
        .toBe('automatic');
      await checkConsolePage(page, 'org-domains-verified');

      // Directories: one created; its base URL and token shown once; a SCIM request with the token answers 200.
      await tabs.getByRole('tab', { name: 'Directories' }).click();
      await page.waitForURL(/tab=directories/);
      await page.getByText('No directory yet').waitFor();
      await checkConsolePage(page, 'org-directories-empty');
      await page.getByLabel('Name', { exact: true }).fill('Initech Okta');
      await page.getByText('Okta', { exact: true }).click();
      await page.getByRole('button', { name: 'Create the directory' }).click();
      await page.getByText('Directory Initech Okta created. Copy its token now').waitFor();
      const token = (await page.locator('.notice .secret code').nth(1).textContent()) ?? '';
      const baseUrl = (await page.locator('.notice .secret code').nth(0).textContent()) ?? '';
      expect(token).toMatch(/^scim_/);
      const [directory] = await ok(app.rest('GET', `/v1/organizations/${org.id}/directories`));
      expect(baseUrl).toBe(`${CONSOLE_ORIGIN}/scim/v2/${directory.id}`);
      const scimGet = (bearer: string) =>
        rawRequest(server.url, 'GET', new URL(`${baseUrl}/Users`).pathname, { headers: { authorization: `Bearer ${bearer}` } });
      expect((await scimGet(token)).status).toBe(200);
      await page.getByRole('row', { name: /Initech Okta/ }).waitFor();
      await checkConsolePage(page, 'org-directories');
      // Shown once: after a reload the token is nowhere on the page.
      await page.reload();
      await page.getByRole('row', { name: /Initech Okta/ }).waitFor();
      expect(await page.content()).not.toContain(token);
      // Rotated: the new token is shown once and works; the old one is refused.
      await page.getByRole('button', { name: 'Rotate token of Initech Okta' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Rotate the token' }).click();
      await page.getByText('New token of Initech Okta').waitFor();
      const rotated = (await page.locator('.notice .secret code').nth(1).textContent()) ?? '';
      expect(rotated).toMatch(/^scim_/);
      expect(rotated).not.toBe(token);
      expect((await scimGet(token)).status).toBe(401);
      expect((await scimGet(rotated)).status).toBe(200);
      await page.getByRole('button', { name: 'Disable Initech Okta' }).click();
      await page.getByRole('button', { name: 'Enable Initech Okta' }).waitFor();

      // Admin portal: a link for the directory intent, shown once with a copy button.
      await tabs.getByRole('tab', { name: 'Admin portal' }).click();
      await page.waitForURL(/tab=portal/);
      await checkConsolePage(page, 'org-portal-empty');
      await page.getByText(/^Directory: SCIM provisioning/).click();
      await page.getByRole('button', { name: 'Create the link' }).click();
      await page.getByText('Link created. Copy it now').waitFor();
      expect(await page.locator('.notice .secret code').textContent()).toMatch(
        /^http:\/\/localhost\/portal\/open\?token=portal_/,
      );
      await checkConsolePage(page, 'org-portal');

      // Back to the members: the tab is absent from the URL.
      await tabs.getByRole('tab', { name: 'Members' }).click();
      await page.waitForURL(`${CONSOLE_ORIGIN}${orgPath}`);
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
