import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { seedOrganizationsSql, ANALYZE_SQL } from '/work/main/bench/seed.ts';
import { startServer, createApplication } from '/work/main/bench/server.ts';
const db = 'gatehouse_bench_manual';
const admin = new Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' }); await admin.connect();
await admin.query(`drop database if exists ${db} with (force)`); await admin.query(`create database ${db}`);
const url = `postgres://postgres@127.0.0.1:5432/${db}`;
const tok = 'op_' + randomBytes(20).toString('hex');
const server = await startServer('pg', { DATABASE_URL: url, GATEHOUSE_DATA_DIR: '/tmp/gh_manual_data', GATEHOUSE_OPERATOR_TOKEN: tok, GATEHOUSE_MASTER_KEY: randomBytes(32).toString('base64') });
const app = await createApplication(server.url, tok);
const c = new Client({ connectionString: url }); await c.connect();
await c.query(seedOrganizationsSql(app.id, 100000)); await c.query(ANALYZE_SQL);
const h = { authorization: `Bearer ${app.secretKey}`, 'x-application-id': app.id };
for (let i = 0; i < 3; i++) {
  let t = performance.now(); const r = await fetch(`${server.url}/v1/organizations?search=harbor`, { headers: h }); const b: any = await r.json();
  console.log('search', r.status, b.data?.total, (performance.now() - t).toFixed(1), 'ms');
  t = performance.now(); const r2 = await fetch(`${server.url}/v1/users`, { method: 'POST', headers: { ...h, 'content-type': 'application/json' }, body: JSON.stringify({ primary_email: `x${i}@e.com` }) });
  console.log('user', r2.status, (performance.now() - t).toFixed(1), 'ms');
}
console.log(JSON.stringify({ url: server.url, app, pid: server.child.pid }));
await c.end(); await admin.end();
await server.stop();
