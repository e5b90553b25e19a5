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
import { createUser, uniqueEmail } from './helpers/fixtures.ts';
import { browserRun } from './helpers/runs.ts';
import { sql, startServer, type TestApp, type TestServer } from './helpers/server.ts';

/**
 * The console's authorization page, a user's linked accounts, authorized apps and events with the merge, and the
 * operators page, in Debian's Chromium with the server's CSP: an instance owner signs in with the one-time link, steps
 * up, writes two tuples, checks one allowed and one denied, expands a relation into its tree; unlinks an account and
 * revokes a grant of a user, reads their timeline and merges them into another user; adds a viewer operator (the link
 * shown once), changes their role and removes them. axe-core checks each page (WCAG 2.1 A/AA) in light and dark.
 */
/** A string matched literally inside a RegExp. */
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

if (!hasChromium) console.warn('browser-console-authz: /usr/bin/chromium not found, the real-browser test is skipped.');

describe.runIf(browserRun)('the console’s authorization, user and operators pages in Chromium', () => {
  let server: TestServer;
  let app: TestApp;
  let browser: Browser;

  beforeAll(async () => {
    server = await startServer({ baseUrl: CONSOLE_ORIGIN });
    app = await server.createApp({ name: 'Console Docs' });
    browser = await launchChromium(`MAP localhost:80 ${new URL(server.url).host}`);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('an owner writes and explores tuples, looks after a user, merges them, and manages an operator', async () => {
    const adaEmail = uniqueEmail('ada');
    const bobEmail = uniqueEmail('bob');
    const ada = await createUser(app, { primary_email: adaEmail, email_verified: true });
    const bob = await createUser(app, { primary_email: bobEmail, email_verified: true });
    // Ada's linked GitHub account, and an app she authorized (as the sign-in and the OAuth provider write them).
    await sql(
      server,
      `insert into identities (id, application_id, user_id, kind, subject, name, created_at)
       values (gen_random_uuid(), ?, ?, 'oauth', 'github:4242', 'Ada on GitHub', now())`,
      [app.id, ada.id],
    );
    const [client] = await sql(
      server,
      `insert into oauth2_clients (id, application_id, name, type, redirect_uris, scopes, dynamic, created_at, updated_at)
       values (gen_random_uuid(), ?, 'Notes', 'public', '["https://notes.example/cb"]', '["openid"]', false, now(), now())
       returning id`,
      [app.id],
    );
    await sql(
      server,
      `insert into oauth2_grants (id, application_id, user_id, client_id, scopes, payload, expires_at, created_at, updated_at)
       values ('grant-console-1', ?, ?, ?, '["openid","profile"]', '{}', now() + interval '1 day', now(), now())`,
      [app.id, ada.id, client.id],
    );

    const ownerEmail = uniqueEmail('authz-owner');
    const owner = await addOperator(server, ownerEmail, 'owner', null);
    const page = await browser.context.newPage();
    const errors = watchConsolePage(page);
    try {
      await signInWithLink(page, owner.link);
      await stepUpWithTotp(server, page, owner.userId, `/console/apps/${app.id}/authz`);

      // Authorization: no tuple yet (the empty state), then two written through the form.
      await page.getByRole('heading', { level: 1, name: 'Authorization' }).waitFor();
      await page.getByText('No tuple yet').waitFor();
      await checkConsolePage(page, 'authz-empty');
      const write = async (object: string, relation: string, subject: string) => {
        await page.getByLabel('Object of the tuple').fill(object);
        await page.getByLabel('Relation of the tuple').fill(relation);
        await page.getByLabel('Subject of the tuple').fill(subject);
        await page.getByRole('button', { name: 'Write the tuple' }).click();
        await page.getByRole('row', { name: new RegExp(`^${literal(object)} ${relation} ${literal(subject)} `) }).waitFor();
      };
      await write('doc:readme', 'viewer', 'team:eng#member');
      await write('team:eng', 'member', `user:${ada.id}`);
      await page.getByText(/^Written \(consistency token \d+\)\.$/).waitFor();
      expect(await page.locator('table tbody tr').count()).toBe(2);

      // A filter by object type goes to the URL.
      await page.getByLabel('Object type').fill('doc');
      await page.getByRole('button', { name: 'Filter the tuples' }).click();
      await page.waitForURL(/namespace=doc/);
      await expect.poll(() => page.locator('table tbody tr').count()).toBe(1);

      // Check: Ada is a viewer of the document through the team; Bob is not.
      await page.getByLabel('Object to ask about').fill('doc:readme');
      await page.getByLabel('Relation to ask about').fill('viewer');
      await page.getByLabel('Subject to check').fill(`user:${ada.id}`);
      await page.getByRole('button', { name: 'Check', exact: true }).click();
      await page.waitForURL(/ask=check/);
      await page.locator('.notice.success').getByText('Allowed').waitFor();
      await page.getByLabel('Subject to check').fill(`user:${bob.id}`);
      await page.getByRole('button', { name: 'Check', exact: true }).click();
      await page.locator('.notice.denied').getByText('Denied').waitFor();
      await checkConsolePage(page, 'authz-check');

      // Expand: the tree from doc:readme#viewer through team:eng#member to Ada.
      await page.getByText('Expand: who has a relation to an object?').click();
      await page.getByRole('button', { name: 'Expand', exact: true }).click();
      await page.waitForURL(/ask=expand/);
      const tree = page.getByRole('list', { name: 'The subject tree of doc:readme#viewer' });
      await tree.waitFor();
      const team = tree.getByRole('list', { name: 'Subjects of team:eng#member' });
      await team.getByText(`user:${ada.id}`).waitFor();
      expect(
        await tree
          .getByRole('list', { name: 'Subjects of doc:readme#viewer' })
          .getByText('team:eng#member', { exact: true })
          .count(),
      ).toBe(1);
      await checkConsolePage(page, 'authz-expand');
      // The question is in the URL: opened again, the page asks it again.
      await page.reload();
      await page.getByRole('list', { name: 'Subjects of team:eng#member' }).getByText(`user:${ada.id}`).waitFor();

      // A user's linked accounts: unlink GitHub.
      await page.goto(`${CONSOLE_ORIGIN}/console/apps/${app.id}/users/${ada.id}?tab=identities`);
      await page.getByRole('heading', { level: 1, name: adaEmail }).waitFor();
      await page.getByRole('row', { name: /Ada on GitHub/ }).waitFor();
      await checkConsolePage(page, 'user-identities');
      await page.getByRole('button', { name: 'Unlink github account Ada on GitHub' }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Unlink the account' }).click();
      await page.getByText('No linked account').waitFor();

      // Their authorized apps: revoke the grant.
      await page.getByRole('tab', { name: 'Authorized apps' }).click();
      await page.waitForURL(/tab=grants/);
      await page.getByRole('row', { name: /openid profile/ }).waitFor();
      await checkConsolePage(page, 'user-grants');
      await page.getByRole('button', { name: `Revoke the grant to client ${client.id}` }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Revoke the grant' }).click();
      await page.getByText('No authorized app').waitFor();

      // Their events: a timeline, newest first, with what was done to them.
      await page.getByRole('tab', { name: 'Events' }).click();
      await page.waitForURL(/tab=events/);
      const timeline = page.getByRole('list', { name: 'Events of this user, newest first' });
      await timeline.getByText('user.identity_unlinked').waitFor();
      const actions = await timeline.locator('li > p:first-of-type > code').allTextContents();
      expect(actions.at(-1)).toBe('user.created');
      await checkConsolePage(page, 'user-events');

      // Merge Ada into Bob: the confirmation names both.
      await page.getByLabel('The user to keep').fill(bobEmail);
      await page.getByRole('button', { name: 'Find the user' }).click();
      await page.getByRole('button', { name: `Merge into ${bobEmail}` }).click();
      const dialog = page.getByRole('alertdialog');
      await dialog.getByRole('heading', { name: `Merge ${adaEmail} into ${bobEmail}?` }).waitFor();
      await checkConsolePage(page, 'user-merge-confirm');
      await dialog.getByRole('button', { name: 'Merge the users' }).click();
      await page.getByText('Merged.').waitFor();
      await page.locator('.badge.merged').waitFor();
      const [merged] = await sql(server, 'select status, merged_into from users where id = ?', [ada.id]);
      expect(merged).toEqual({ status: 'merged', merged_into: bob.id });
      // Ada's tuple now names Bob.
      const [tuple] = await sql(server, "select subject_id from authz_tuples where application_id = ? and object_type = 'team'", [
        app.id,
      ]);
      expect(tuple.subject_id).toBe(bob.id);

      // Operators, from the header: add a viewer of every application; the link is shown once.
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'Operators' }).click();
      await page.getByRole('heading', { level: 1, name: 'Operators' }).waitFor();
      await page.getByRole('row', { name: new RegExp(`^${literal(ownerEmail)}`) }).waitFor();
      const viewerEmail = uniqueEmail('authz-viewer');
      await page.getByLabel('Email', { exact: true }).fill(viewerEmail);
      await page.getByRole('button', { name: 'Add the operator' }).click();
      const link = page.locator('.secret code');
      await link.waitFor();
      expect(await link.textContent()).toMatch(/^http:\/\/localhost\/console\/sign-in\?token=ml_/);
      await page.getByRole('button', { name: `Copy the sign-in link of ${viewerEmail}` }).waitFor();
      const row = page.getByRole('row', { name: new RegExp(`^${literal(viewerEmail)}`) });
      await row.waitFor();
      await checkConsolePage(page, 'operators');
      await page.reload();
      await row.waitFor();
      expect(await page.locator('.secret code').count()).toBe(0);

      // Their role: viewer → support, everywhere.
      await page.getByLabel(`Role of ${viewerEmail} in every application`, { exact: true }).selectOption('support');
      await page.getByRole('button', { name: `Save the role of ${viewerEmail} in every application` }).click();
      await page.getByText('The role was changed.').waitFor();
      const [role] = await sql(
        server,
        'select r.role from operator_roles r join operators o on o.id = r.operator_id join users u on u.id = o.user_id where u.primary_email = ?',
        [viewerEmail],
      );
      expect(role.role).toBe('support');

      // Removed: gone from the list.
      await page.getByRole('button', { name: `Remove the operator ${viewerEmail}` }).click();
      await page.getByRole('alertdialog').getByRole('button', { name: 'Remove the operator' }).click();
      await row.waitFor({ state: 'detached' });
      expect(errors).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
