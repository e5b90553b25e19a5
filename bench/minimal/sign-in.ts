/**
 * The baseline of the sign-in suite: the least a server can do for `GET /v1/auth/me` and `POST /v1/auth/token/refresh`
 * (fastify + jose + pg, nothing else). `node bench/minimal/sign-in.ts`, configured by the environment: PORT, HOST,
 * DATABASE_URL (the scratch database: Gatehouse's `users` table and the benchmark's `minimal_refresh`),
 * MINIMAL_PRIVATE_KEY (its own Ed25519 key, PKCS#8 PEM), MINIMAL_KID, MINIMAL_ISSUER, MINIMAL_AUDIENCE, MINIMAL_TTL_S.
 * Same access-token claims and checks as Gatehouse; same pool size (20) as the server's default.
 */
import { createHash, createPrivateKey, createPublicKey, randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { jwtVerify, SignJWT } from 'jose';
import pg from 'pg';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const privateKey = createPrivateKey(env('MINIMAL_PRIVATE_KEY'));
const publicKey = createPublicKey(privateKey);
const [issuer, audience, kid, ttl] = [
  env('MINIMAL_ISSUER'),
  env('MINIMAL_AUDIENCE'),
  env('MINIMAL_KID'),
  Number(env('MINIMAL_TTL_S')),
];
const pool = new pg.Pool({ connectionString: env('DATABASE_URL'), max: 20 });
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const app = Fastify();

app.get('/readyz', async () => (await pool.query('select 1 as ok')).rows[0]);

app.get('/v1/auth/me', async (request, reply) => {
  const token = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
  const verified = await jwtVerify(token, publicKey, {
    algorithms: ['EdDSA'],
    typ: 'at+jwt',
    issuer,
    audience,
    requiredClaims: ['sub', 'sid', 'exp'],
  }).catch(() => null);
  if (!verified) return reply.code(401).send({ error: 'invalid_token' });
  const { rows } = await pool.query(
    `select id, primary_email, email_verified, status, profile, merged_into, created_at, updated_at
       from users where id = $1 and status = 'active'`,
    [verified.payload.sub],
  );
  return rows[0] ? { data: rows[0] } : reply.code(401).send({ error: 'invalid_token' });
});

app.post<{ Body: { refresh_token?: unknown } }>('/v1/auth/token/refresh', async (request, reply) => {
  const presented = request.body?.refresh_token;
  if (typeof presented !== 'string') return reply.code(422).send({ error: 'validation_failed' });
  const next = `rt_${randomBytes(32).toString('base64url')}`;
  // One statement rotates the token: live session, active user, the presented token still the current one.
  const { rows } = await pool.query<{ session_id: string; user_id: string; aal: number }>(
    `update minimal_refresh r set token_hash = $1, last_active_at = now()
       from users u
      where r.token_hash = $2 and r.revoked_at is null and r.expires_at > now()
        and u.id = r.user_id and u.status = 'active'
      returning r.session_id, r.user_id, r.aal`,
    [sha256(next), sha256(presented)],
  );
  const row = rows[0];
  if (!row) return reply.code(401).send({ error: 'invalid_token' });
  const accessToken = await new SignJWT({ sid: row.session_id, aal: row.aal, org: null, org_role: null })
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
    .setIssuer(issuer)
    .setAudience(audience)
    .setSubject(row.user_id)
    .setIssuedAt()
    .setExpirationTime(`${ttl}s`)
    .sign(privateKey);
  const tokens = { access_token: accessToken, refresh_token: next, token_type: 'Bearer', expires_in: ttl, aal: row.aal };
  return { data: { ...tokens, session_id: row.session_id } };
});

await app.listen({ port: Number(env('PORT')), host: env('HOST') });
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => void app.close().then(() => pool.end().then(() => process.exit(0))));
}
