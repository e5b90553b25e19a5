/**
 * verifyToken (@gatehouse/sdk) for a token seen before, against one raw Ed25519 signature verification
 * (`crypto.verify` with a KeyObject), in the same process, on this machine. The target is ≥ 50×.
 * Part of the sign-in suite (`npm run bench -- sign-in` runs it and reads the JSON line it prints); on its
 * own: `npx node bench/micro/verify.ts` from the repository root (Node 24; `--check`: exit 1 below the target).
 * The JWKS is served from 127.0.0.1; nothing leaves the machine.
 */
import { generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyToken } from '@gatehouse/sdk/verify';
import { SignJWT } from 'jose';

const TARGET = 50;

/** Operations per second: a warm-up, then the best of three rounds of about 700 ms (`batch` calls between readings). */
async function opsPerSecond(run: () => unknown, batch: number): Promise<number> {
  for (let i = 0; i < batch; i++) await run();
  let best = 0;
  for (let round = 0; round < 3; round++) {
    let count = 0;
    const start = performance.now();
    while (performance.now() - start < 700) {
      for (let i = 0; i < batch; i++) await run();
      count += batch;
    }
    best = Math.max(best, (count / (performance.now() - start)) * 1000);
  }
  return best;
}

const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const kid = randomUUID();
const applicationId = randomUUID();
const jwk = publicKey.export({ format: 'jwk' });
const jwks = JSON.stringify({ keys: [{ ...jwk, kid, alg: 'EdDSA', use: 'sig' }] });

const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' }).end(jwks);
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const now = Math.floor(Date.now() / 1000);
const token = await new SignJWT({ sid: randomUUID(), aal: 1, org: null, org_role: null })
  .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'at+jwt' })
  .setSubject(randomUUID())
  .setIssuer(baseUrl)
  .setAudience(applicationId)
  .setIssuedAt(now)
  .setExpirationTime(now + 600)
  .sign(privateKey);
const [header, payload, signature] = token.split('.') as [string, string, string];
const signingInput = Buffer.from(`${header}.${payload}`);
const signatureBytes = Buffer.from(signature, 'base64url');

const options = { baseUrl, applicationId };
const first = performance.now();
await verifyToken(token, options);
const firstMs = performance.now() - first;

// The raw check is synchronous: batches of 100 calls, each awaited (the await costs far less than a signature check).
const raw = await opsPerSecond(() => {
  if (!verify(null, signingInput, publicKey, signatureBytes)) throw new Error('raw verify failed');
}, 100);
const cached = await opsPerSecond(() => verifyToken(token, options), 1_000);
// A server reads the token out of each request's header: a new string every time, whose hash V8 has not cached.
// Each copy is used once (a string caches its hash on first use), right after it was made, as a header just parsed
// would be: batches of 1 000 new copies, only the verification timed; the best of three rounds of 100 batches.
let fresh = 0;
for (let round = 0; round < 3; round++) {
  let elapsed = 0;
  for (let batch = 0; batch < 100; batch++) {
    const copies = Array.from({ length: 1_000 }, () => Buffer.from(token).toString('latin1'));
    const start = performance.now();
    for (const copy of copies) await verifyToken(copy, options);
    elapsed += performance.now() - start;
  }
  fresh = Math.max(fresh, (100_000 / elapsed) * 1000);
}
const ratio = Math.min(cached, fresh) / raw;
server.close();

// One JSON line (what the sign-in suite reads); `ratio` is the slower verifyToken figure ÷ the raw verification.
console.log(
  JSON.stringify({
    firstMs,
    rawOpsPerSecond: raw,
    sameStringOpsPerSecond: cached,
    newStringOpsPerSecond: fresh,
    ratio,
    target: TARGET,
  }),
);
if (process.argv.includes('--check') && ratio < TARGET) process.exitCode = 1;
