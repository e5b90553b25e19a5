import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { parse } from 'tldts';
import { AppError } from '../../errors.ts';
import { isLocalName } from '../../lib/ssrf.ts';

const MAX_NAME = 253;
const MAX_LABEL = 63;
/** The TXT challenge lives at `_gatehouse-challenge.<domain>`, which must itself fit in a DNS name. */
export const CHALLENGE_PREFIX = '_gatehouse-challenge';
const MAX_VERIFIABLE = MAX_NAME - CHALLENGE_PREFIX.length - 1;
/** A letter-digit-hyphen label (RFC 1123; punycode labels are LDH too): what a certificate can name. */
const LDH_LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

const refuse = (message: string): AppError =>
  new AppError('invalid_domain', `The domain is not valid: ${message}`, [{ path: 'domain', message }]);

/**
 * The canonical form of a custom domain, or 422 `invalid_domain` (CONTRACT §3): trimmed, lower-case, one trailing dot
 * stripped, IDN to ASCII (punycode, WHATWG's IDNA through node's `domainToASCII`); then a public host name only: no
 * IP address in any spelling, no local name (`localhost`, `.local`, `.internal`, `.localhost`, …), no wildcard, port,
 * path, scheme or userinfo, labels of at most 63 and names of at most 253 characters (232 in fact: the TXT challenge
 * name adds 21 and must fit in 253), and a registrable name under an ICANN public suffix (`tldts`: `example.co.uk` yes; `co.uk`, `example.invalidtld` no).
 */
export function canonicalDomain(input: string): string {
  let name = input.trim().toLowerCase();
  // Far past any valid name: refused before any further work.
  if (name.length > 4 * MAX_NAME) throw refuse(`longer than ${MAX_NAME} characters`);
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (!name) throw refuse('empty');
  // What the WHATWG parser would quietly drop or decode is refused as written.
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(name) || name.includes('://'))
    throw refuse('a scheme is not allowed; give the host name only');
  if (/[/?#\\]/.test(name)) throw refuse('a path is not allowed; give the host name only');
  if (name.includes('@')) throw refuse('userinfo is not allowed');
  if (name.includes('*')) throw refuse('wildcards are not allowed');
  const bracketed = /^\[(.*)\]$/.exec(name)?.[1];
  if (isIP(bracketed ?? name)) throw refuse('an IP address is not allowed; give a host name');
  if (name.includes(':')) throw refuse('a port is not allowed');
  if (/[\s%]/.test(name)) throw refuse('spaces and percent-encoding are not allowed');
  const ascii = domainToASCII(name);
  if (!ascii) throw refuse('not a valid internationalised domain name');
  // Decimal, octal and hex IPv4 spellings (`2130706433`, `0x7f.1`) come out as an address.
  if (isIP(ascii)) throw refuse('an IP address is not allowed; give a host name');
  if (ascii.length > MAX_NAME) throw refuse(`longer than ${MAX_NAME} characters`);
  if (ascii.length > MAX_VERIFIABLE) {
    throw refuse(`longer than ${MAX_VERIFIABLE} characters: its ${CHALLENGE_PREFIX} TXT record name would exceed ${MAX_NAME}`);
  }
  const labels = ascii.split('.');
  if (labels.some((label) => label.length > MAX_LABEL)) throw refuse(`a label is longer than ${MAX_LABEL} characters`);
  if (labels.some((label) => !LDH_LABEL.test(label)))
    throw refuse('each label must be letters, digits and inner hyphens, with no empty label');
  if (isLocalName(ascii)) throw refuse('a local name is not allowed');
  const parsed = parse(ascii, { allowPrivateDomains: false });
  if (!parsed.isIcann || !parsed.domain) throw refuse('not under a public suffix');
  return ascii;
}
