import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { ok, sql } from './helpers/server.ts';
import { endUser } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * PostgreSQL ending the server's connections (a restart, a failover, an administrator): every pool of the process — the
 * ORM's and the rate limiter's own — drops the dead connections and opens new ones, and the process keeps serving. An
 * idle connection ended this way is an 'error' event on its pool, which ends the process when nobody listens.
 */
const suite = serverSuite({ smtp: false });

describe.runIf(inject('databaseUrl'))('PostgreSQL ends every connection of the server', () => {
  it('the server keeps answering: secret-key calls, rate-limited browser calls, writes', async () => {
    const app = await suite.server.createApp({ allowed_origins: ['https://app.example.com'] });
    const exercise = async () => {
      await ok(app.rest('GET', '/v1/users'));
      await ok(endUser(app, 'POST', '/v1/auth/passkeys/sign-in/start'));
      await ok(app.rest('POST', '/v1/users', { primary_email: `restart.${Date.now()}.${Math.random()}@example.com` }), 201);
    };
    await exercise();
    const [{ db }] = await sql<{ db: string }>(suite.server, 'select current_database() as db');
    const admin = new pg.Client({ connectionString: inject('databaseUrl') });
    await admin.connect();
    try {
      const ended = await admin.query('select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = $1', [db]);
      // Directly, the ORM's pool and the rate limiter's each hold a connection of their own. Behind a transaction-mode
      // pooler, what PostgreSQL ends are the pooler's connections, and one can serve both pools.
      expect(ended.rows.length).toBeGreaterThanOrEqual(inject('poolerUrl') ? 1 : 2);
    } finally {
      await admin.end();
    }
    // The pools learn of it as their connections are used or their idle ones are closed under them.
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (let round = 0; round < 3; round++) {
      try {
        await exercise();
        break;
      } catch (error) {
        // A query already on its way over an ended connection may fail once; the pool then replaces it.
        if (round === 2) throw error;
      }
    }
    await exercise();
  });
});
