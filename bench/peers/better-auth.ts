/**
 * The Better Auth peer of the better-auth suite: Better Auth 1.x (bench/package.json's devDependency; `npm ci --prefix
 * bench` installs it) with its magic-link plugin and database sessions (no cookie cache) on PostgreSQL, served by its
 * own Node adapter (`toNodeHandler`). `node bench/peers/better-auth.ts`, configured by the environment: PORT, HOST,
 * DATABASE_URL (the scratch database; Better Auth's tables `user`, `session`, `account`, `verification` are created
 * at start by its own migration tool, `getMigrations(…).runMigrations()`), BETTER_AUTH_SECRET. Same pool size (20) as
 * Gatehouse's default. Magic-link tokens are stored hashed (SHA-256, as Gatehouse stores its own); the link's email is
 * discarded (the suite writes the verification rows itself, as the mfa suite writes Gatehouse's pending sign-ins).
 * Its rate limiter is off: the suite raises Gatehouse's limits too.
 */
import { createServer } from 'node:http';
import { betterAuth } from 'better-auth';
import { getMigrations } from 'better-auth/db/migration';
import { toNodeHandler } from 'better-auth/node';
import { magicLink } from 'better-auth/plugins/magic-link';
import pg from 'pg';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const [port, host] = [Number(env('PORT')), env('HOST')];
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
const auth = betterAuth({
  database: pool,
  baseURL: `http://${host}:${port}`,
  secret: env('BETTER_AUTH_SECRET'),
  telemetry: { enabled: false },
  rateLimit: { enabled: false },
  session: { cookieCache: { enabled: false } },
  logger: { level: 'error' },
  plugins: [magicLink({ storeToken: 'hashed', sendMagicLink: async () => {} })],
});
const { runMigrations } = await getMigrations(auth.options);
await runMigrations();

const handler = toNodeHandler(auth);
const server = createServer((request, response) => {
  if (request.url === '/readyz') {
    pool.query('select 1 as ok').then(
      () => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":1}'),
      () => response.writeHead(503).end(),
    );
    return;
  }
  void handler(request, response);
});
server.keepAliveTimeout = 65_000;
server.listen(port, host);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => server.close(() => void pool.end().then(() => process.exit(0))));
}
