import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { createDirectory, expectScimError, scimClient, scimOk, scimUser } from './helpers/scim.ts';
import { acrossServers, ok, sql, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite({ smtp: false });
let app: TestApp;

beforeAll(async () => {
  app = await suite.server.createApp();
});

describe('SCIM: races', () => {
  it('20 concurrent creates of one userName (two processes on PostgreSQL): one 201, every other one 409 uniqueness', async () => {
    const dir = await createDirectory(suite.server, app);
    const email = uniqueEmail('race');
    const responses = await acrossServers(suite.server, 20, (target, i) =>
      scimClient(target, dir.id, dir.token)('POST', '/Users', scimUser(i % 2 ? email.toUpperCase() : email)),
    );
    const winners = responses.filter((r) => r.status === 201);
    expect(winners, JSON.stringify(responses.map((r) => [r.status, r.body?.detail]))).toHaveLength(1);
    for (const r of responses.filter((r) => r.status !== 201)) expectScimError(r, 409, 'uniqueness');
    expect(await sql(suite.server, 'select count(*)::int as n from users where application_id = ?', [app.id])).toEqual([
      { n: 1 },
    ]);
    const { members } = await ok(app.rest('GET', `/v1/organizations/${dir.organizationId}/members`));
    expect(members).toHaveLength(1);
  });

  it('20 concurrent creates of different userNames with one new address: one user, one 201, the rest 409 uniqueness', async () => {
    const dir = await createDirectory(suite.server, app);
    const email = uniqueEmail('same-address');
    const responses = await acrossServers(suite.server, 20, (target, i) =>
      scimClient(target, dir.id, dir.token)(
        'POST',
        '/Users',
        scimUser(`name-${i}-${email}`, { emails: [{ value: email, primary: true }] }),
      ),
    );
    expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of responses.filter((r) => r.status !== 201)) expectScimError(r, 409, 'uniqueness');
  });
});

/** Provisioned through the API in parallel batches, as an identity provider's first sync does. */
const USERS = 1000;

describe(`SCIM: ${USERS} users`, () => {
  it('are provisioned, counted, listed page by page and found by filter', async () => {
    const dir = await createDirectory(suite.server, app);
    const run = Date.now().toString(36);
    const started = performance.now();
    const ids: string[] = [];
    for (let batch = 0; batch < USERS; batch += 50) {
      const created = await Promise.all(
        Array.from({ length: Math.min(50, USERS - batch) }, (_, i) =>
          scimOk(dir.scim('POST', '/Users', scimUser(`bulk-${run}-${batch + i}@example.com`)), 201),
        ),
      );
      ids.push(...created.map((u) => u.id));
    }
    const provisioned = performance.now() - started;
    const shown = await ok(app.rest('GET', `/v1/organizations/${dir.organizationId}/directories/${dir.id}`));
    expect(shown.user_count).toBe(USERS);
    const seen: string[] = [];
    for (let start = 1; start <= USERS; start += 100) {
      const page = await scimOk(dir.scim('GET', `/Users?startIndex=${start}&count=100`));
      expect(page.totalResults).toBe(USERS);
      seen.push(...page.Resources.map((u: any) => u.id));
    }
    expect(new Set(seen).size).toBe(USERS);
    expect(new Set(seen)).toEqual(new Set(ids));
    const whole = await scimOk(dir.scim('GET', '/Users?count=1000'));
    expect(whole.itemsPerPage).toBe(Math.min(USERS, 1000));
    const found = await scimOk(
      dir.scim('GET', `/Users?filter=${encodeURIComponent(`userName eq "BULK-${run}-${USERS - 1}@example.com"`)}`),
    );
    expect(found.Resources.map((u: any) => u.id)).toEqual([ids[USERS - 1]]);
    const { total } = await ok(app.rest('GET', `/v1/organizations/${dir.organizationId}/members?limit=1`));
    expect(total).toBe(USERS);
    console.log(`${USERS} SCIM users provisioned in ${Math.round(provisioned)} ms`);
  }, 300_000);
});
