/**
 * Outbound requests over https (webhooks, SAML metadata, OpenID discovery all go through `guardedRequest`): node:https
 * loads at the first such request, not at start, and the request is TLS with the certificate verified.
 */
import { once } from 'node:events';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { guardedRequest } from '@gatehouse/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKeyPair } from './helpers/saml-idp.ts';

let server: ReturnType<typeof createServer>;
let url: string;
let requests = 0;

beforeAll(async () => {
  const keys = await makeKeyPair();
  server = createServer({ key: keys.privateKeyPem, cert: keys.certificatePem }, (_req, res) => {
    requests++;
    res.end('hello');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  // Listening on a TCP port: the address is an AddressInfo.
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});

afterAll(() => {
  server.close();
});

describe('an outbound https request', () => {
  it('goes over TLS and refuses a certificate no authority signed: the receiver never gets the request', async () => {
    const failure = await guardedRequest(url, { allowInsecure: true, timeoutMs: 5_000, body: '{}' }).then(
      () => undefined,
      (error: unknown) => error,
    );
    // A plain-http request to this port would have been answered (or reset), not refused for its certificate.
    expect((failure as { code?: string } | undefined)?.code).toBe('DEPTH_ZERO_SELF_SIGNED_CERT');
    expect(requests).toBe(0);
  });

  it('is refused the same way a second time (the https transport is made once and kept)', async () => {
    const failures = await Promise.all(
      [1, 2, 3].map(() =>
        guardedRequest(url, { allowInsecure: true, timeoutMs: 5_000 }).then(
          () => undefined,
          (error: unknown) => (error as { code?: string }).code,
        ),
      ),
    );
    expect(failures).toEqual(['DEPTH_ZERO_SELF_SIGNED_CERT', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'DEPTH_ZERO_SELF_SIGNED_CERT']);
    expect(requests).toBe(0);
  });
});
