import { purgeExpired } from '@gatehouse/api';
import { beforeAll, describe, expect, it } from 'vitest';
import { uniqueEmail } from './helpers/fixtures.ts';
import { sql, type TestApp } from './helpers/server.ts';
import { signIn } from './helpers/sign-in.ts';
import { serverSuite } from './helpers/suite.ts';

const suite = serverSuite();

/** Time passes by moving the rows' own timestamps back (expiry and age are judged by the database clock). */
const age = (table: string, column: string, days: number, where: string, params: unknown[]) =>
  sql(suite.server, `update ${table} set ${column} = now() - make_interval(days => ${days}) where ${where}`, params);
const count = async (table: string, where: string, params: unknown[]) =>
  Number((await sql<{ n: string }>(suite.server, `select count(*) as n from ${table} where ${where}`, params))[0]!.n);

describe('retention: the housekeeping job purges what nobody needs any more', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await suite.server.createApp({
      // The audit log keeps events too (audit-logs.test.ts): here both logs keep them 7 days.
      settings: { retention: { events_days: 7, messages_days: 14, ended_sessions_days: 3 }, audit_log_retention_days: 7 },
    });
  });

  it('the settings have defaults and bounds', async () => {
    const fresh = await suite.server.createApp();
    expect(fresh.application.settings.retention).toEqual({ events_days: 30, messages_days: 30, ended_sessions_days: 30 });
    const res = await app.rest('PATCH', `/v1/applications/${app.id}`, { settings: { retention: { events_days: 0 } } });
    expect(res.status).toBe(422);
  });

  it("events older than the application's events_days go; newer ones and other applications' stay", async () => {
    const other = await suite.server.createApp();
    const mine = (await app.rest('POST', '/v1/users', { primary_email: uniqueEmail() })).body.data;
    const theirs = (await other.rest('POST', '/v1/users', { primary_email: uniqueEmail() })).body.data;
    await age('events', 'created_at', 8, `data->>'id' in (?, ?)`, [mine.id, theirs.id]);
    await purgeExpired(suite.server.server.orm);
    expect(await count('events', `data->>'id' = ?`, [mine.id])).toBe(0);
    // The other application keeps the default 30 days.
    expect(await count('events', `data->>'id' = ?`, [theirs.id])).toBe(1);
    const recent = (await app.rest('POST', '/v1/users', { primary_email: uniqueEmail() })).body.data;
    await purgeExpired(suite.server.server.orm);
    expect(await count('events', `data->>'id' = ?`, [recent.id])).toBe(1);
  });

  it('ended sessions go after ended_sessions_days, their refresh-token hashes a day after they ended; live ones stay', async () => {
    const ended = await signIn(suite.server, suite.smtp, app, uniqueEmail('ended'));
    const live = await signIn(suite.server, suite.smtp, app, uniqueEmail('live'));
    const endedId = ended.tokens.session_id;
    const liveId = live.tokens.session_id;
    await age('sessions', 'revoked_at', 2, 'id = ?', [endedId]);
    await purgeExpired(suite.server.server.orm);
    expect(await count('refresh_tokens', 'session_id = ?', [endedId])).toBe(0);
    expect(await count('sessions', 'id = ?', [endedId])).toBe(1);
    await age('sessions', 'revoked_at', 4, 'id = ?', [endedId]);
    await purgeExpired(suite.server.server.orm);
    expect(await count('sessions', 'id = ?', [endedId])).toBe(0);
    expect(await count('sessions', 'id = ?', [liveId])).toBe(1);
    expect(await count('refresh_tokens', 'session_id = ?', [liveId])).toBeGreaterThan(0);
  });

  it('rate-limit counters go an hour after their window ended; live ones stay', async () => {
    const now = Date.now();
    const key = `gh:test:${crypto.randomUUID()}`;
    await sql(suite.server, 'insert into rate_limits (key, points, expire) values (?, 1, ?), (?, 1, ?)', [
      `${key}:old`,
      now - 3_700_000,
      `${key}:live`,
      now + 60_000,
    ]);
    await purgeExpired(suite.server.server.orm);
    expect(await count('rate_limits', 'key = ?', [`${key}:old`])).toBe(0);
    expect(await count('rate_limits', 'key = ?', [`${key}:live`])).toBe(1);
  });

  it('spent one-time rows go a day after they expired or were used; the message log after messages_days', async () => {
    const email = uniqueEmail('spent');
    await signIn(suite.server, suite.smtp, app, email);
    const normalized = email.toLowerCase();
    expect(await count('magic_links', 'email_normalized = ?', [normalized])).toBe(1);
    await age('magic_links', 'consumed_at', 2, 'email_normalized = ?', [normalized]);
    await age('messages', 'created_at', 15, '"to" = ?', [email]);
    await purgeExpired(suite.server.server.orm);
    expect(await count('magic_links', 'email_normalized = ?', [normalized])).toBe(0);
    expect(await count('messages', '"to" = ?', [email])).toBe(0);
  });
});
