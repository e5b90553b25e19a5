/**
 * verifyToken for a token seen before, against one raw Ed25519 signature verification (node:crypto), on this machine.
 * The target is ≥ 50×. `npm run bench:verify -w @gatehouse/sdk` (add `-- --check` to exit 1 below the target).
 * The JWKS is served from 127.0.0.1; nothing leaves the machine.
 */
import { generateKeyPairSync, randomUUID, verify } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT } from 'jose';
import { verifyToken } from '../src/verify.ts';

const TARGET = 50;
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

/** Operations per second of `run`, after a warm-up, over about `ms` milliseconds. */
async function measure(run: () => unknown, ms = 1_000): Promise<number> {
  for (let i = 0; i < 1_000; i++) await run();
  let count = 0;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < ms) {
    for (let i = 0; i < 1_000; i++) await run();
    count += 1_000;
    elapsed = performance.now() - start;
  }
  return (count / elapsed) * 1000;
}

const options = { baseUrl, applicationId };
const first = performance.now();
await verifyToken(token, options);
const firstMs = performance.now() - first;

const raw = await measure(() => {
  if (!verify(null, signingInput, publicKey, signatureBytes)) throw new Error('raw verify failed');
});
const cached = await measure(() => verifyToken(token, options));
const ratio = cached / raw;
server.close();

const format = (n: number) => Math.round(n).toLocaleString('en-US');
console.log(`first verifyToken (fetches the JWKS): ${firstMs.toFixed(1)} ms`);
console.log(`raw Ed25519 verify (node:crypto):     ${format(raw)} ops/s`);
console.log(`verifyToken, token seen before:       ${format(cached)} ops/s`);
console.log(`ratio: ${ratio.toFixed(0)}× (target ≥ ${TARGET}×)`);
if (process.argv.includes('--check') && ratio < TARGET) process.exitCode = 1;
