import { promises as dns, type LookupAddress } from 'node:dns';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError, fieldOf } from '../errors.ts';

/**
 * The guard of every outbound HTTP request the service makes on a developer's say-so (webhooks, SAML metadata, …),
 * SECURITY.md rule 8:
 *
 * - `checkOutboundUrl(url, policy)` — the static check at create/update: `https` only, no userinfo, no IP literal
 *   outside public unicast space (private, loopback, link-local/metadata, CGNAT, unique-local, IPv4-mapped and
 *   IPv4-compatible IPv6, …), no non-canonical IPv4 spelling (decimal, octal, hex, short forms), no local-only names
 *   (`localhost`, `.local`, `.internal`, single labels). Throws 422 `invalid_url`.
 * - `guardedRequest(url, options)` — the request itself: checks the URL again, resolves the name (node:dns; the
 *   resolvers of the policy's `dnsServers` when set), refuses when any resolved address is not allowed or when the lookup
 *   fails (fail closed), and connects to the address it checked (a custom `lookup` pins it: no DNS rebinding between
 *   the check and the connection). Redirects are never followed (node:http does not), so a 3xx is just an answer.
 *
 * `allowInsecure` (`GATEHOUSE_ALLOW_INSECURE_WEBHOOKS=1`, for local development and tests) additionally allows `http`
 * and loopback addresses, nothing else.
 *
 * Address ranges come from `ipaddr.js`: only its `unicast` range (public space) passes; every named special range,
 * present or added later, is refused.
 */

export interface OutboundPolicy {
  /** Also allow `http:` and loopback addresses (local development and tests). */
  allowInsecure?: boolean;
  /**
   * The server setting that sets `allowInsecure` for this use (`GATEHOUSE_ALLOW_INSECURE_WEBHOOKS`, …): a refusal
   * it would lift names it, so a developer on localhost learns the way out.
   */
  insecureSetting?: string;
  /** The resolvers names are looked up on (`GATEHOUSE_DNS_SERVERS`: `ip` or `ip:port`); unset: the system's lookup. */
  dnsServers?: readonly string[];
}

/** Why a request was not made (never contains the address or anything the receiver said). */
export class OutboundBlockedError extends Error {
  readonly code: 'blocked_url' | 'blocked_address' | 'dns_failed';
  constructor(code: OutboundBlockedError['code'], message: string) {
    super(message);
    this.name = 'OutboundBlockedError';
    this.code = code;
  }
}

const MAX_URL_LENGTH = 2048;
const LOCAL_SUFFIXES = ['.localhost', '.local', '.internal', '.localdomain', '.home.arpa', '.arpa', '.lan', '.intranet', '.corp'];

/**
 * IPv6 addresses that carry an IPv4 address in their last 32 bits: IPv4-mapped (`::ffff:0:0/96`, `::ffff:7f00:1`) and
 * the deprecated IPv4-compatible (`::/96`, RFC 4291 §2.5.5.1: `[::127.0.0.1]` is `::7f00:1`, which ipaddr.js calls
 * unicast). What they reach depends on the stack, so both are refused outright (`::1` stays loopback).
 */
const IPV4_IN_IPV6 = [ipaddr.parseCIDR('::ffff:0:0/96'), ipaddr.parseCIDR('::/96')];

/**
 * True when `address` (a canonical IPv4 or IPv6 string) may be connected to under `policy`: the one address rule of
 * every outbound request (webhooks, SAML metadata and sign-in URLs, OIDC discovery).
 */
export function isAllowedAddress(address: string, policy: OutboundPolicy = {}): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  const range = parsed.range();
  if (parsed.kind() === 'ipv6' && range !== 'loopback' && IPV4_IN_IPV6.some((cidr) => parsed.match(cidr))) return false;
  if (range === 'unicast') return true;
  return Boolean(policy.allowInsecure) && range === 'loopback';
}

/** Why an address is refused, in words: its class, never the address itself (it may be a resolved internal one). */
export function addressClass(address: string): string {
  if (!ipaddr.isValid(address)) return 'not a valid IP address';
  const parsed = ipaddr.parse(address);
  if (parsed instanceof ipaddr.IPv6 && parsed.isIPv4MappedAddress()) return 'an IPv4-mapped IPv6 address';
  const range = parsed.range();
  const words: Record<string, string> = {
    loopback: 'a loopback address',
    private: 'a private address',
    uniqueLocal: 'a private (unique-local) address',
    linkLocal: 'a link-local address (where cloud metadata services live)',
    carrierGradeNat: 'a carrier-grade NAT address',
    unspecified: 'the unspecified address',
    broadcast: 'a broadcast address',
    multicast: 'a multicast address',
  };
  return words[range] ?? 'a reserved or special-purpose address';
}

/**
 * The end of a refusal: for what `allowInsecure` lifts (http, loopback), the setting that lifts it in development;
 * for anything else, that no setting does.
 */
function remedy(liftedByInsecure: boolean, policy: OutboundPolicy): string {
  if (!liftedByInsecure) return '; no setting allows it';
  return policy.allowInsecure || !policy.insecureSetting ? '' : insecureRemedy(policy.insecureSetting);
}

/** How a developer allows such a URL (http, loopback) on their own machine, never in production. */
export const insecureRemedy = (setting: string) => `; for local development only, ${setting}=1 on the server allows it`;

/** The refusal of an address under `policy`, or undefined when it may be connected to. */
function addressRefusal(address: string, policy: OutboundPolicy, prefix = ''): string | undefined {
  if (isAllowedAddress(address, policy)) return undefined;
  const loopback = ipaddr.isValid(address) && ipaddr.parse(address).range() === 'loopback';
  return `${prefix}${addressClass(address)}${remedy(loopback, policy)}`;
}

/** The authority exactly as written in the URL (`user@host:port`), or undefined when there is none. */
const rawAuthority = (url: string): string | undefined => /^[a-z][a-z0-9+.-]*:\/\/([^/?#\\]*)/i.exec(url.trim())?.[1];

/** The host exactly as written (lower-cased, without port), to catch re-spelled IPv4. */
function rawHost(authority: string): string {
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1).toLowerCase();
  return host.replace(/:\d*$/, '').toLowerCase();
}

/**
 * The static check of an outbound URL (create/update time). Answers the parsed URL; throws 422 `invalid_url` whose
 * message and detail (at `field`) say why, and which development setting would allow it, if any.
 * A DNS name is not resolved here (the answer could change anyway): `guardedRequest` checks what it resolves to.
 */
export function checkOutboundUrl(value: string, policy: OutboundPolicy = {}, field = 'url'): URL {
  const judged = judgeOutboundUrl(value, policy);
  if (typeof judged !== 'string') return judged;
  throw new AppError('invalid_url', `The URL is not allowed: ${judged}`, [{ path: field, message: judged }]);
}

/** `checkOutboundUrl`'s judgement: the parsed URL, or the reason it is refused. */
function judgeOutboundUrl(value: string, policy: OutboundPolicy): URL | string {
  if (value.length > MAX_URL_LENGTH) return `longer than ${MAX_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'not an absolute URL';
  }
  if (url.protocol === 'http:' && !policy.allowInsecure) return `not https${remedy(true, policy)}`;
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return policy.allowInsecure ? 'only http(s) URLs' : 'only https URLs';
  const authority = rawAuthority(value);
  if (authority === undefined) return 'not an absolute URL';
  if (url.username || url.password || authority.includes('@')) return 'credentials (userinfo) are not allowed in the URL';
  const written = rawHost(authority);
  let host = url.hostname.toLowerCase();
  if (host.startsWith('[')) return addressRefusal(host.slice(1, -1), policy) ?? url;
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) {
    // WHATWG URL turns 2130706433, 0x7f.1 and 0177.0.0.1 into 127.0.0.1: refuse every spelling but the canonical one.
    if (written !== host) return 'an IPv4 address must be written in dotted decimal';
    return addressRefusal(host, policy) ?? url;
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return policy.allowInsecure ? url : `a loopback name (localhost)${remedy(true, policy)}`;
  }
  if (isLocalName(host))
    return `a local-network name (${host.includes('.') ? 'local-only suffix' : 'a single label'})${remedy(false, policy)}`;
  return url;
}

/**
 * True for a name that only means something on a local network: `localhost`, a single label, or a name under a
 * local-only suffix (`.localhost`, `.local`, `.internal`, `.home.arpa`, …). `host`: lower-case, no trailing dot.
 */
export function isLocalName(host: string): boolean {
  return host === 'localhost' || !host.includes('.') || LOCAL_SUFFIXES.some((suffix) => host.endsWith(suffix));
}

/**
 * A DNS resolver on `servers` (`GATEHOUSE_DNS_SERVERS`), or on the system's (`/etc/resolv.conf`) when unset: for the
 * records `dns.lookup` cannot answer (TXT), and for addresses when servers are configured.
 */
export function dnsResolver(servers: readonly string[] | undefined): InstanceType<typeof dns.Resolver> {
  const resolver = new dns.Resolver({ timeout: 3000, tries: 2 });
  if (servers?.length) resolver.setServers(servers);
  return resolver;
}

/**
 * Every address `hostname` resolves to (A and AAAA), on `servers` or through the system's lookup. Throws `dns_failed`
 * when there is none or the lookup fails.
 */
async function resolveHost(hostname: string, servers: readonly string[] | undefined): Promise<LookupAddress[]> {
  try {
    if (!servers?.length) return await dns.lookup(hostname, { all: true, verbatim: true });
    const resolver = dnsResolver(servers);
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(hostname), resolver.resolve6(hostname)]);
    const found = [
      ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
      ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
    ];
    if (!found.length) throw new Error('no address');
    return found;
  } catch {
    throw new OutboundBlockedError('dns_failed', 'the host name could not be resolved');
  }
}

/** The address to connect to: every resolved address must be allowed (a name with one private address is refused). */
export async function resolveChecked(url: URL, policy: OutboundPolicy = {}): Promise<LookupAddress> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (ipaddr.isValid(host) && (host.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(host))) {
    const refused = addressRefusal(host, policy);
    if (refused) throw new OutboundBlockedError('blocked_address', refused);
    return { address: host, family: host.includes(':') ? 6 : 4 };
  }
  const addresses = await resolveHost(host, policy.dnsServers);
  for (const { address } of addresses) {
    const refused = addressRefusal(address, policy, 'the host name resolves to ');
    if (refused) throw new OutboundBlockedError('blocked_address', refused);
  }
  const [first] = addresses;
  if (!first) throw new OutboundBlockedError('dns_failed', 'The host name could not be resolved');
  return first;
}

/** A `lookup` that answers only the address already checked (both the single and the `all` callback forms). */
const pinnedLookup =
  (pinned: LookupAddress): LookupFunction =>
  (_hostname, options, callback) => {
    // LookupFunction types only the single-address callback; with `all` the caller passed the array form.
    if (fieldOf(options, 'all')) (callback as (e: null, a: LookupAddress[]) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };

type Transport = { module: typeof http | typeof import('node:https'); agent: http.Agent };

const plain: Transport = { module: http, agent: new http.Agent({ keepAlive: true, maxSockets: 64 }) };
let secure: Promise<Transport> | undefined;

/**
 * The module and keep-alive agent of a scheme (checked to be http: or https: before any request). node:https, and TLS
 * with it, loads at the first https request rather than at every start (about 10 ms).
 */
function transportOf(url: URL): Promise<Transport> {
  if (url.protocol === 'http:') return Promise.resolve(plain);
  secure ??= import('node:https').then((https) => ({
    module: https,
    agent: new https.Agent({ keepAlive: true, maxSockets: 64 }),
  }));
  return secure;
}

export interface GuardedRequestOptions extends OutboundPolicy {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The whole exchange (lookup, connect, answer, body) must end within this. */
  timeoutMs: number;
  /**
   * How much of the answer's body to keep (the rest is read and dropped, up to 64 KiB or one byte past `keepBytes`,
   * then the socket is closed).
   */
  keepBytes?: number;
}

export interface GuardedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The first `keepBytes` of the body. */
  body: Buffer;
}

const DRAIN_LIMIT = 64 * 1024;

/** The errors of a kept-alive socket the peer closed while it sat idle: nothing was answered on it. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Sends one request under the guard. Throws `OutboundBlockedError` (nothing was sent) or a network error whose
 * `code` is `timeout`, `ECONNREFUSED`, … A 3xx is answered as it is (never followed). A request that fails on a
 * reused keep-alive socket before any answer (the peer closed it as it was picked: the classic keep-alive race) is
 * sent once more on a new connection, as Node's documentation advises (`request.reusedSocket`).
 */
export async function guardedRequest(target: string, options: GuardedRequestOptions): Promise<GuardedResponse> {
  const deadline = Date.now() + options.timeoutMs;
  const url = judgeOutboundUrl(target, options);
  if (typeof url === 'string') throw new OutboundBlockedError('blocked_url', url);
  const pinned = await withTimeout(resolveChecked(url, options), options.timeoutMs);
  const transport = await transportOf(url);
  try {
    return await send(url, transport, pinned, options, deadline);
  } catch (error) {
    if (!fieldOf(error, 'staleSocket')) throw error;
    return send(url, transport, pinned, options, deadline);
  }
}

function send(
  url: URL,
  transport: Transport,
  pinned: LookupAddress,
  options: GuardedRequestOptions,
  deadline: number,
): Promise<GuardedResponse> {
  const remaining = Math.max(1, deadline - Date.now());
  const keep = options.keepBytes ?? 1024;
  const drainLimit = Math.max(DRAIN_LIMIT, keep + 1);
  return new Promise<GuardedResponse>((resolve, reject) => {
    let answered = false;
    const request = transport.module.request(
      url,
      {
        method: options.method ?? 'POST',
        headers: options.headers,
        agent: transport.agent,
        lookup: pinnedLookup(pinned),
      },
      (response) => {
        answered = true;
        const kept: Buffer[] = [];
        let size = 0;
        const finish = () => {
          clearTimeout(timer);
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(kept).subarray(0, keep) });
        };
        response.on('data', (chunk: Buffer) => {
          if (size < keep) kept.push(chunk.subarray(0, keep - size));
          size += chunk.length;
          if (size > drainLimit) {
            response.destroy();
            finish();
          }
        });
        response.on('end', finish);
        response.on('error', (error) => {
          clearTimeout(timer);
          reject(error);
        });
      },
    );
    const timer = setTimeout(
      () => request.destroy(Object.assign(new Error('The request timed out'), { code: 'timeout' })),
      remaining,
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const stale = !answered && request.reusedSocket && STALE_SOCKET.has(error.code ?? '');
      reject(stale ? Object.assign(error, { staleSocket: true }) : error);
    });
    request.end(options.body);
  });
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new OutboundBlockedError('dns_failed', 'the host name lookup timed out')), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
