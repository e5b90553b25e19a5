import { generateKeyPairSync, verify, sign, createPublicKey } from 'node:crypto';
const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const data = Buffer.from('x'.repeat(400));
const sig = sign(null, data, privateKey);
for (const label of ['keyobject', 'keyobject2']) {
  let n = 0; const t = performance.now();
  while (performance.now() - t < 1000) { for (let i = 0; i < 100; i++) verify(null, data, publicKey, sig); n += 100; }
  console.log(label, Math.round(n / ((performance.now() - t) / 1000)), 'ops/s sync');
}
const { webcrypto } = await import('node:crypto');
const k = await webcrypto.subtle.importKey('jwk', publicKey.export({ format: 'jwk' }), { name: 'Ed25519' }, false, ['verify']);
let n = 0; const t = performance.now();
while (performance.now() - t < 1000) { for (let i = 0; i < 100; i++) await webcrypto.subtle.verify('Ed25519', k, sig, data); n += 100; }
console.log('webcrypto', Math.round(n / ((performance.now() - t) / 1000)), 'ops/s');
