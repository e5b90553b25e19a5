import { createGatehouse, GatehouseError } from '@gatehouse/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type PrivatePostgres, privatePostgresAvailable, startPrivatePostgres } from './helpers/private-postgres.ts';
import { embeddedRun } from './helpers/runs.ts';
import { expectError, ok, rawRequest, startServer, type TestApp, type TestServer, until } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';

/**
 * The database goes away (CONTRACT §1: 503 `service_unavailable`). A PostgreSQL server of the test's own is stopped
 * under a running server: every request that needs it answers 503 with `retry-after` (never 500 internal_error), the
 * outage is logged once and its end once (not once per request), and the SDK's retries of reads and keyed creates
 * carry a call over the outage. The embedded database (PGlite) lives inside the process: it cannot be unreachable, so
 * there is nothing to test there.
 */
const UNREACHABLE = 'database unreachable: answering 503 service_unavailable until it is back';

describe.runIf(embeddedRun && privatePostgresAvailable)('the database is unreachable', { timeout: 600_000 }, () => {
  let postgres: PrivatePostgres;
  let server: TestServer;
  const logLines: string[] = [];
  const logged = (message: string) => logLines.filter((line) => JSON.parse(line).msg === message);

  beforeAll(async () => {
    postgres = await startPrivatePostgres();
    server = await startServer({ database: { kind: 'postgres', url: postgres.url, poolSize: 10 }, logLines });
  }, 600_000);
  afterAll(async () => {
    await server?.close();
    await postgres?.dispose();
  });

  it('answers 503 service_unavailable with retry-after, logs the outage once and its end once, and the SDK retries across it', async () => {
    const app: TestApp = await server.createApp({ allowed_origins: ['https://app.example.com'] });
    const before = await ok(app.rest('POST', '/v1/users', { primary_email: 'before@example.com' }), 201);
    await ok(endUser(app, 'POST', '/v1/auth/passkeys/sign-in/start'));

    await postgres.stop();
    const answers = {
      'secret-key read': await app.rest('GET', '/v1/users'),
      'secret-key write': await app.rest('POST', '/v1/users', { primary_email: 'during@example.com' }),
      'keyed create': await app.rest('POST', '/v1/organizations', { name: 'During' }, { 'idempotency-key': 'outage-1' }),
      'end-user call (rate limited)': await endUser(app, 'POST', '/v1/auth/passkeys/sign-in/start'),
      'operator read': await rawRequest(server.url, 'GET', '/v1/applications', {
        headers: { authorization: `Bearer ${server.operatorToken}` },
      }),
    };
    for (const [label, res] of Object.entries(answers)) {
      expectError(res, 503, 'service_unavailable', label);
      expect(res.headers.get('retry-after'), label).toBe('5');
      expect(res.body.error.message, label).not.toMatch(/ECONN|select|insert|postgres/i);
    }
    // tRPC callers (the SDK) get the same code; with retries off, at once.
    const sdk = createGatehouse({ baseUrl: server.url, applicationId: app.id, secretKey: app.secretKey, maxRetries: 0 });
    const failed = await sdk.users.list().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(GatehouseError);
    expect((failed as GatehouseError).code).toBe('service_unavailable');
    expect((failed as GatehouseError).status).toBe(503);
    // The hosted pages say so too (a page, 503, retry-after).
    const page = await fetch(`${server.url}/a/${app.id}/sign-in`);
    expect(page.status).toBe(503);
    expect(page.headers.get('retry-after')).toBe('5');
    // Balancers take the process out while the database is away; the process itself is up.
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    // One line for the outage (once a probe has confirmed it), whatever the number of refused requests; none of them
    // is an unhandled error.
    await until(() => (logged(UNREACHABLE).length ? true : undefined), 'the outage to be logged');
    expect(logged(UNREACHABLE)).toHaveLength(1);
    expect(logged('unhandled error')).toEqual([]);

    // The SDK retries a read and a keyed create (it honours retry-after) while the database comes back.
    const patient = createGatehouse({ baseUrl: server.url, applicationId: app.id, secretKey: app.secretKey, maxRetries: 8 });
    const read = patient.users.list();
    const create = patient.organizations.create({ name: 'Across the outage' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await postgres.start();
    const [users, organization] = await Promise.all([read, create]);
    expect(users.users.map((u) => u.id)).toContain(before.id);
    expect(organization.name).toBe('Across the outage');
    // The keyed create ran once, however many attempts it took.
    const orgs = await ok(app.rest('GET', '/v1/organizations?limit=100'));
    expect(orgs.organizations.filter((o: { name: string }) => o.name === 'Across the outage')).toHaveLength(1);

    await until(() => (logged('database reachable again').length ? true : undefined), 'the end of the outage to be logged');
    const [end] = logged('database reachable again');
    expect(JSON.parse(end!)).toMatchObject({ level: 30, lasted_ms: expect.any(Number), refused: expect.any(Number) });
    expect(JSON.parse(end!).refused).toBeGreaterThanOrEqual(Object.keys(answers).length);
    expect(logged(UNREACHABLE)).toHaveLength(1);
    expect(logged('unhandled error')).toEqual([]);
    // The background workers kept polling through it, and left the telling to the one outage line.
    expect([...logged('mail outbox poll failed'), ...logged('webhook delivery poll failed')]).toEqual([]);
    expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    await ok(endUser(app, 'POST', '/v1/auth/passkeys/sign-in/start'));

    // A second outage is a second pair of lines.
    await postgres.stop();
    expectError(await app.rest('GET', '/v1/users'), 503, 'service_unavailable', 'second outage');
    await until(() => (logged(UNREACHABLE).length === 2 ? true : undefined), 'the second outage to be logged');
    await postgres.start();
    await until(() => (logged('database reachable again').length === 2 ? true : undefined), 'the second end to be logged');
    expect(logged(UNREACHABLE)).toHaveLength(2);
    await ok(app.rest('GET', '/v1/users'));
  });
});
