import { createOrm, type DatabaseConfig, migrate, type Orm } from '@gatehouse/api';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseFromEnv, readEnv } from '../src/config.ts';
import { uniqueEmail } from './helpers/fixtures.ts';
import { hasPgBouncer, type PgBouncer, startPgBouncer } from './helpers/pgbouncer.ts';
import { onDatabase } from './helpers/processes.ts';
import { ok, startServer, type TestServer } from './helpers/server.ts';
import { endUser, type SmtpSink, signIn } from './helpers/sign-in.ts';
import { startSmtpSink } from './helpers/smtp.ts';

/**
 * GATEHOUSE_DATABASE_POOLER=transaction (docs/configuration.md): the server behind a pooler in transaction mode —
 * Debian's PgBouncer 1.18, which forwards named prepared statements to whichever server connection it lends — with
 * two server connections per database, so that consecutive statements of one client connection land on different
 * server connections. The hot paths (every statement `preparedQuery` names, the rate limiter's), sign-in, refresh,
 * authorization checks and migrations must work there; and without the setting they must not (else this file would
 * prove nothing about it). CI installs PgBouncer (.ci/run), as it installs Chromium for the browser tests. It runs in
 * the PostgreSQL run; the run through the CI's own PgBouncer (GATEHOUSE_TEST_POOLER_URL) has the whole suite for it.
 */
const admin = inject('databaseUrl');

describe('GATEHOUSE_DATABASE_POOLER and GATEHOUSE_DATABASE_POOL_SIZE', () => {
  const url = 'postgres://gatehouse@db.example.com:6432/gatehouse';
  it('default to a direct connection with the default pool', async () => {
    const { database, where } = await databaseFromEnv(readEnv({ DATABASE_URL: url }));
    expect(database).toEqual({ kind: 'postgres', url, pooler: 'direct', poolSize: undefined });
    expect(where).toBe('PostgreSQL (DATABASE_URL)');
  });
  it('transaction: unnamed statements, and the start log says so', async () => {
    const env = readEnv({ DATABASE_URL: url, GATEHOUSE_DATABASE_POOLER: 'transaction', GATEHOUSE_DATABASE_POOL_SIZE: '40' });
    const { database, where } = await databaseFromEnv(env);
    expect(database).toEqual({ kind: 'postgres', url, pooler: 'transaction', poolSize: 40 });
    expect(where).toMatch(/transaction-mode pooler/);
  });
  it('refuse other values at start, naming the variable', () => {
    expect(() => readEnv({ DATABASE_URL: url, GATEHOUSE_DATABASE_POOLER: 'session' })).toThrow(/GATEHOUSE_DATABASE_POOLER/);
    expect(() => readEnv({ DATABASE_URL: url, GATEHOUSE_DATABASE_POOL_SIZE: '1' })).toThrow(/GATEHOUSE_DATABASE_POOL_SIZE/);
    expect(() => readEnv({ DATABASE_URL: url, GATEHOUSE_DATABASE_POOL_SIZE: 'many' })).toThrow(/GATEHOUSE_DATABASE_POOL_SIZE/);
  });
});

describe.runIf(admin && !inject('poolerUrl') && hasPgBouncer())('behind PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer;
  let smtp: SmtpSink;
  const databases: string[] = [];

  beforeAll(async () => {
    const direct = new URL(admin);
    bouncer = await startPgBouncer({ host: direct.hostname, port: Number(direct.port || 5432) }, 2);
    smtp = await startSmtpSink();
  });
  afterAll(async () => {
    await smtp?.close();
    await bouncer?.stop();
    for (const name of databases) await onDatabase(admin, `drop database if exists ${name} with (force)`);
  });

  /** A database of the test's own: empty, or a copy of the run's migrated template. */
  const database = async (label: string, migrated: boolean): Promise<string> => {
    const name = `gatehouse_pooler_${label}_${process.pid}_${Date.now()}`;
    databases.push(name);
    await onDatabase(admin, `create database ${name}${migrated ? ` template ${inject('databaseTemplate')}` : ''}`);
    return name;
  };

  /** Everyday traffic of eight clients at once: API-key calls, users, magic-link sign-ins, /me, refresh, authz. */
  async function traffic(server: TestServer) {
    const app = await server.createApp();
    await ok(
      app.rest('POST', '/v1/authz/tuples', {
        writes: [{ object: 'doc:readme', relation: 'viewer', subject: 'group:staff#member' }],
      }),
    );
    return Promise.allSettled(
      Array.from({ length: 8 }, async (_, i) => {
        for (let round = 0; round < 3; round++) {
          await ok(app.rest('GET', '/v1/users?limit=5'));
          await ok(app.rest('GET', '/v1/organizations?limit=5'));
          await ok(app.rest('POST', '/v1/organizations', { name: `Org ${i}.${round}` }), 201);
          const signedIn = await signIn(server, smtp, app, uniqueEmail(`pooler${i}`));
          const me = await ok(endUser(app, 'GET', '/v1/auth/me', undefined, signedIn.tokens.access_token));
          expect(me.id).toBe(signedIn.user.id);
          await ok(endUser(app, 'POST', '/v1/auth/token/refresh', { refresh_token: signedIn.tokens.refresh_token }));
          await ok(
            app.rest('POST', '/v1/authz/tuples', {
              writes: [{ object: 'group:staff', relation: 'member', subject: `user:${signedIn.user.id}` }],
            }),
          );
          const check = await ok(
            app.rest('POST', '/v1/authz/check', {
              object: 'doc:readme',
              relation: 'viewer',
              subject: `user:${signedIn.user.id}`,
            }),
          );
          expect(check.allowed).toBe(true);
        }
      }),
    );
  }

  it('migrations run exactly once when three processes start together through it', async () => {
    const name = await database('migrate', false);
    const config: DatabaseConfig = { kind: 'postgres', url: bouncer.url(name), pooler: 'transaction', poolSize: 2 };
    const orms: Orm[] = [];
    try {
      for (let i = 0; i < 3; i++) orms.push(await createOrm(config));
      const applied = await Promise.all(orms.map((orm) => migrate(orm)));
      const ran = applied.filter((names) => names.length > 0);
      expect(ran).toHaveLength(1);
      const rows = await onDatabase(admin.replace(/\/[^/]*$/, `/${name}`), 'select name from mikro_orm_migrations');
      expect(rows).toHaveLength(ran[0]?.length ?? -1);
      // No advisory lock outlived its transaction on a server connection the pooler keeps.
      const held = await onDatabase(
        admin,
        `select 1 from pg_locks l join pg_database d on d.oid = l.database where l.locktype = 'advisory' and d.datname = '${name}'`,
      );
      expect(held).toEqual([]);
    } finally {
      await Promise.all(orms.map((orm) => orm.close()));
    }
  });

  it('with GATEHOUSE_DATABASE_POOLER=transaction, the hot paths answer under concurrent load', async () => {
    const name = await database('transaction', true);
    const server = await startServer({
      smtpUrl: smtp.url,
      database: { kind: 'postgres', url: bouncer.url(name), pooler: 'transaction', poolSize: 10 },
    });
    try {
      const outcomes = await traffic(server);
      expect(outcomes.filter((o) => o.status === 'rejected').map((o) => (o as PromiseRejectedResult).reason)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('without it, named prepared statements break there (the setting is what makes the difference)', async () => {
    const name = await database('direct', true);
    const lines: string[] = [];
    const server = await startServer({
      smtpUrl: smtp.url,
      logLines: lines,
      database: { kind: 'postgres', url: bouncer.url(name), pooler: 'direct', poolSize: 10 },
    });
    try {
      const outcomes = await traffic(server);
      expect(outcomes.filter((o) => o.status === 'rejected').length).toBeGreaterThan(0);
      expect(lines.join('\n')).toMatch(/"sqlState":"(42P05|26000)"/);
    } finally {
      await server.close();
    }
  });

  it('with the setting, no statement of the server is left prepared on a server connection', async () => {
    // A server connection of PostgreSQL's own list: the pooler's pool is two connections, both used by the load above.
    const name = await database('prepared', true);
    const server = await startServer({
      smtpUrl: smtp.url,
      database: { kind: 'postgres', url: bouncer.url(name), pooler: 'transaction', poolSize: 10 },
    });
    try {
      await traffic(server);
      const client = new pg.Client({ connectionString: bouncer.url(name) });
      await client.connect();
      try {
        // Each statement of this client may land on either server connection: ask both several times.
        for (let i = 0; i < 10; i++) {
          const { rows } = await client.query('select name from pg_prepared_statements');
          expect(rows).toEqual([]);
        }
      } finally {
        await client.end();
      }
    } finally {
      await server.close();
    }
  });
});
