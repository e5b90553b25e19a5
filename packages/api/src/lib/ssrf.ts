import { lookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { BlockList, isIP } from 'node:net';
import { AppError } from '../errors.ts';

/**
 * Outbound HTTP on behalf of a caller (IdP metadata today; webhooks and DNS checks later) — SECURITY 8: resolve the
 * host, refuse private, loopback, link-local, metadata and IPv4-mapped addresses, connect to the address that was
 * checked (so a second DNS answer cannot swap in 127.0.0.1), follow no redirect, and fail closed on anything odd.
 */
const refused = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  refused.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  // IPv4-mapped and -translated forms would reach any IPv4 address, the refused ones included.
  ['::ffff:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const)
  refused.addSubnet(net, prefix, 'ipv6');

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** Whether an outbound request may connect to `address` (loopback only when `allowLoopback`, for local development). */
export function addressAllowed(address: string, allowLoopback = false): boolean {
  const family = isIP(address);
  if (!family) return false;
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (allowLoopback && loopback.check(address, type)) return true;
  return !refused.check(address, type);
}

export interface GuardedFetchOptions {
  /** `GATEHOUSE_ALLOW_INSECURE_*`: also `http:` and loopback addresses — nothing else. */
  allowInsecure?: boolean;
  maxBytes: number;
  timeoutMs?: number;
  /** The field the URL came from, for the error's details. */
  field: string;
}

const refuse = (field: string, message: string) =>
  new AppError('invalid_url', 'The URL is not allowed', [{ path: field, message }]);

/** GETs `url` through the guard above; answers the body as text. Every refusal is 422 `invalid_url`. */
export async function guardedFetch(url: string, options: GuardedFetchOptions): Promise<string> {
  const { field } = options;
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw refuse(field, 'not a URL');
  }
  const insecureOk = options.allowInsecure === true;
  if (target.protocol !== 'https:' && !(insecureOk && target.protocol === 'http:')) throw refuse(field, 'must be https');
  if (target.username || target.password) throw refuse(field, 'credentials in the URL');
  const host = target.hostname.replace(/^\[|\]$/g, '');
  let addresses: Array<{ address: string; family: number }>;
  try {
    addresses = isIP(host) ? [{ address: host, family: isIP(host) }] : await lookup(host, { all: true, verbatim: true });
  } catch {
    throw refuse(field, 'the host does not resolve');
  }
  // Every answer must be allowed: a name that resolves to one public and one private address is refused whole.
  if (!addresses.length || !addresses.every((a) => addressAllowed(a.address, insecureOk))) {
    throw refuse(field, 'resolves to a private, loopback, link-local or reserved address');
  }
  const pinned = addresses[0]!;
  const client = target.protocol === 'https:' ? https : http;
  return new Promise<string>((resolve, reject) => {
    const request = client.request(
      target,
      {
        method: 'GET',
        headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml', 'user-agent': 'Gatehouse' },
        timeout: options.timeoutMs ?? 5000,
        // The connection goes to the checked address; TLS still verifies the certificate for the URL's host name.
        lookup: (_hostname, lookupOptions, callback) => {
          if ((lookupOptions as { all?: boolean }).all) callback(null, [pinned] as never);
          else callback(null, pinned.address, pinned.family);
        },
      },
      (response) => {
        const status = response.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          response.resume();
          // Redirects are not followed: the next hop was never checked.
          reject(refuse(field, status >= 300 && status < 400 ? 'redirects are not followed' : `answered HTTP ${status}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > options.maxBytes) {
            request.destroy();
            reject(refuse(field, `the document is larger than ${options.maxBytes} bytes`));
          } else chunks.push(chunk);
        });
        response.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        response.on('error', () => reject(refuse(field, 'the download failed')));
      },
    );
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', () => reject(refuse(field, 'could not be fetched')));
    request.end();
  });
}
