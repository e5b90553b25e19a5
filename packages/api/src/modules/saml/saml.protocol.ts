import { X509Certificate } from 'node:crypto';
import type { SAML } from '@node-saml/node-saml';
import type { Document as XmlDocument, Element as XmlElement } from '@xmldom/xmldom';
import { errorMessage } from '../../errors.ts';

/**
 * The SAML 2.0 protocol as Gatehouse speaks it: certificates, IdP metadata, our SP metadata, AuthnRequests and the
 * validation of a posted Response. Signatures are checked by @node-saml/node-saml (never by hand); the checks it
 * leaves to its caller (algorithms, Recipient, Destination, Issuer, replay, DOCTYPE, size) are done here, always on
 * what the signature covered.
 */

export const MD = 'urn:oasis:names:tc:SAML:2.0:metadata';
const DSIG = 'http://www.w3.org/2000/09/xmldsig#';
const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';
export const NAMEID_FORMATS = [
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
];
/** The largest SAML response we read, decoded (SECURITY 7: a bounded amount of XML reaches the parser). */
export const MAX_RESPONSE_BYTES = 256 * 1024;
const MAX_CERT_CHARS = 65_536;
const SKEW_MS = 60_000;

/** RSA-SHA256 or stronger (and ECDSA with SHA-2): rsa-sha1, HMAC and anything unknown are refused before checking. */
const SIGNATURE_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
]);
const DIGEST_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmlenc#sha256',
  'http://www.w3.org/2001/04/xmldsig-more#sha384',
  'http://www.w3.org/2001/04/xmlenc#sha512',
]);

export interface ParsedCertificate {
  der: Buffer;
  expiresAt: Date;
}

/**
 * An IdP signing certificate as the API takes it: base64 of one DER X.509 certificate with an RSA key of at least
 * 2048 bits. PEM text, random bytes, private keys, PKCS#12 and anything else answer a reason (never a certificate).
 */
export function parseCertificate(value: string): ParsedCertificate | string {
  if (value.length > MAX_CERT_CHARS) return `at most ${MAX_CERT_CHARS} characters`;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) {
    return 'must be base64 (DER), not PEM text or another encoding';
  }
  const der = Buffer.from(value, 'base64');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(der);
  } catch {
    return 'is not an X.509 certificate (base64 of its DER bytes)';
  }
  // Exactly one certificate and nothing after it (a PKCS#12 or a concatenation is not one certificate).
  if (!cert.raw.equals(der)) return 'must be exactly one DER certificate';
  const key = cert.publicKey;
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    return 'must carry an RSA key of at least 2048 bits';
  }
  return { der, expiresAt: new Date(cert.validTo) };
}

export const pemOf = (base64Der: string) =>
  `-----BEGIN CERTIFICATE-----\n${(base64Der.match(/.{1,64}/g) ?? []).join('\n')}\n-----END CERTIFICATE-----\n`;

/** DOCTYPE (and so entities: XXE, billion laughs) is refused before any parser sees the text. */
export const hasDoctype = (xml: string) => /<!DOCTYPE|<!ENTITY/i.test(xml);

/** The XML parser loads with the first metadata or response it reads, not at every process start. */
let xmlParser: Promise<typeof import('@xmldom/xmldom')> | undefined;

async function parseXml(xml: string): Promise<XmlDocument> {
  if (hasDoctype(xml)) throw new Error('DOCTYPE is not allowed');
  xmlParser ??= import('@xmldom/xmldom');
  const { DOMParser } = await xmlParser;
  const doc = new DOMParser({
    onError: (level, message) => {
      if (level !== 'warning') throw new Error(`XML: ${message}`);
    },
  }).parseFromString(xml, 'text/xml');
  if (!doc.documentElement) throw new Error('no document element');
  return doc;
}

const children = (parent: XmlElement, ns: string, local: string): XmlElement[] =>
  Array.from(parent.getElementsByTagNameNS(ns, local));

export interface IdpMetadata {
  entityId: string;
  ssoUrl: string;
  /** Signing certificates (base64 DER) that parse, latest expiry first. */
  certificates: string[];
}

/**
 * Reads an IdP's EntityDescriptor: entity id, the SingleSignOnService for HTTP-Redirect (else HTTP-POST), and its
 * signing certificates. A reason string when it is not usable.
 */
export async function parseIdpMetadata(xml: string): Promise<IdpMetadata | string> {
  // The IdP's certificate is the file a newcomer most often has at hand: say what it is and where it goes.
  if (/^\s*-----BEGIN [A-Z0-9 ]+-----/.test(xml)) {
    return (
      'this looks like a PEM certificate, not SAML metadata XML (an EntityDescriptor document). Send the IdP\u2019s ' +
      'metadata here, or create the connection with POST /v1/saml/connections and put the certificate in ' +
      'idp_certificate (the base64 between the BEGIN and END lines), with idp_entity_id and idp_sso_url'
    );
  }
  let doc: XmlDocument;
  try {
    doc = await parseXml(xml);
  } catch (error) {
    return hasDoctype(xml) ? 'DOCTYPE is not allowed in metadata' : `not well-formed XML (${errorMessage(error)})`;
  }
  const root = doc.documentElement;
  if (!root) return 'not well-formed XML (no root element)';
  const entity =
    root.localName === 'EntityDescriptor' && root.namespaceURI === MD ? root : children(root, MD, 'EntityDescriptor')[0];
  if (!entity) return 'no EntityDescriptor';
  const entityId = entity.getAttribute('entityID');
  if (!entityId) return 'the EntityDescriptor has no entityID';
  const idp = children(entity, MD, 'IDPSSODescriptor')[0];
  if (!idp) return 'no IDPSSODescriptor';
  const services = children(idp, MD, 'SingleSignOnService');
  const sso =
    services.find((s) => s.getAttribute('Binding') === BINDING_REDIRECT) ??
    services.find((s) => s.getAttribute('Binding') === BINDING_POST);
  const ssoUrl = sso?.getAttribute('Location');
  if (!ssoUrl) return 'no SingleSignOnService with the HTTP-Redirect or HTTP-POST binding';
  const certificates = children(idp, MD, 'KeyDescriptor')
    .filter((k) => !k.getAttribute('use') || k.getAttribute('use') === 'signing')
    .flatMap((k) => children(k, DSIG, 'X509Certificate'))
    .map((c) => (c.textContent ?? '').replace(/\s+/g, ''))
    .map((b64) => ({ b64, parsed: parseCertificate(b64) }))
    .filter((c): c is { b64: string; parsed: ParsedCertificate } => typeof c.parsed !== 'string')
    .sort((a, b) => b.parsed.expiresAt.getTime() - a.parsed.expiresAt.getTime())
    .map((c) => c.b64);
  if (!certificates.length) return 'no usable signing certificate (X.509, RSA ≥ 2048 bits)';
  return { entityId, ssoUrl, certificates };
}

const escapeXml = (value: string) =>
  value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&apos;');

/** Our SP metadata for one connection, handed to the IdP's administrator. */
export function spMetadataXml(spEntityId: string, acsUrl: string): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<md:EntityDescriptor xmlns:md="${MD}" entityID="${escapeXml(spEntityId)}">`,
    `  <md:SPSSODescriptor AuthnRequestsSigned="false" WantAssertionsSigned="true" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">`,
    ...NAMEID_FORMATS.map((f) => `    <md:NameIDFormat>${f}</md:NameIDFormat>`),
    `    <md:AssertionConsumerService Binding="${BINDING_POST}" Location="${escapeXml(acsUrl)}" index="0" isDefault="true"/>`,
    '  </md:SPSSODescriptor>',
    '</md:EntityDescriptor>',
    '',
  ].join('\n');
}

export interface SpConfig {
  spEntityId: string;
  acsUrl: string;
  idpEntityId: string;
  idpSsoUrl: string;
  /** base64 DER */
  idpCertificate: string;
}

/** node-saml (and its XML stack) loads on the first SAML request, not at every process start. */
let library: Promise<typeof import('@node-saml/node-saml')> | undefined;

async function samlFor(sp: SpConfig, requestId?: string) {
  library ??= import('@node-saml/node-saml');
  const { SAML, ValidateInResponseTo } = await library;
  return new SAML({
    issuer: sp.spEntityId,
    callbackUrl: sp.acsUrl,
    entryPoint: sp.idpSsoUrl,
    // The stored certificate only: KeyInfo in the response is never trusted.
    idpCert: pemOf(sp.idpCertificate),
    audience: sp.spEntityId,
    acceptedClockSkewMs: SKEW_MS,
    wantAssertionsSigned: false,
    wantAuthnResponseSigned: false,
    // InResponseTo is checked against the database by the caller (any process can finish a sign-in).
    validateInResponseTo: ValidateInResponseTo.never,
    identifierFormat: null,
    disableRequestedAuthnContext: true,
    signatureAlgorithm: 'sha256',
    ...(requestId ? { generateUniqueId: () => requestId } : {}),
  });
}

/** The IdP URL carrying an AuthnRequest with the given ID (HTTP-Redirect binding, deflated, unsigned). */
export async function authorizeUrl(sp: SpConfig, requestId: string, relayState: string): Promise<string> {
  return (await samlFor(sp, requestId)).getAuthorizeUrlAsync(relayState, undefined, {});
}

/** A response refused: `reason` is for the log only; the browser learns nothing about which check failed. */
export class SamlRejection extends Error {
  readonly reason: string;
  readonly status: 401 | 413;

  constructor(reason: string, status: 401 | 413 = 401) {
    super(reason);
    this.reason = reason;
    this.status = status;
  }
}

export interface AcceptedAssertion {
  assertionId: string;
  /** When the replay-cache entry may be dropped: the assertion can no longer be valid after it. */
  validUntil: Date;
  nameId: string;
  nameIdFormat: string | null;
  /** The signed InResponseTo (SubjectConfirmationData), null for an IdP-initiated response. */
  inResponseTo: string | null;
  attributes: Record<string, string[]>;
}

/**
 * A posted response parsed once (DOCTYPE already refused by `decodeResponse`): read for `peekInResponseTo`, then
 * checked by `validateResponse`. `error` when it is not well-formed XML.
 */
export type ParsedResponse =
  | { xml: string; doc: XmlDocument; error?: undefined }
  | { xml: string; doc?: undefined; error: string };

export async function parseResponse(xml: string): Promise<ParsedResponse> {
  try {
    return { xml, doc: await parseXml(xml) };
  } catch (error) {
    return { xml, error: errorMessage(error) };
  }
}

/** The unsigned claims of a response that we may read before validating it: which request it says it answers. */
export function peekInResponseTo(response: ParsedResponse): string | null {
  return response.doc?.documentElement?.getAttribute('InResponseTo') || null;
}

/** Decodes the posted SAMLResponse; refuses oversized ones (413) and DOCTYPE before any parsing. */
export function decodeResponse(samlResponse: string): string {
  if (samlResponse.length > Math.ceil((MAX_RESPONSE_BYTES * 4) / 3) + 4096) throw new SamlRejection('response too large', 413);
  const xml = Buffer.from(samlResponse.replace(/\s+/g, ''), 'base64').toString('utf8');
  if (Buffer.byteLength(xml) > MAX_RESPONSE_BYTES) throw new SamlRejection('response too large', 413);
  if (hasDoctype(xml)) throw new SamlRejection('DOCTYPE in response');
  return xml;
}

/** An element as xml2js (inside node-saml) gives it: children by name in arrays, attributes under `$`, text under `_`. */
type XmlJs = { [child: string]: unknown; $?: Record<string, unknown>; _?: unknown };
const isNode = (value: unknown): value is XmlJs => typeof value === 'object' && value !== null && !Array.isArray(value);
const nodes = (children: unknown): XmlJs[] => (Array.isArray(children) ? children.filter(isNode) : []);
const firstOf = (children: unknown): unknown => (Array.isArray(children) ? children[0] : undefined);
const first = (children: unknown): XmlJs | undefined => {
  const value = firstOf(children);
  return isNode(value) ? value : undefined;
};
const stringOf = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);
/** The text of an element: xml2js gives a bare string, or `_` when the element also has attributes. */
const textIn = (value: unknown): string | undefined => stringOf(value) ?? (isNode(value) ? stringOf(value._) : undefined);
const textOf = (children: unknown): string | undefined => textIn(firstOf(children));

/**
 * Validates a decoded response for a connection. Everything that decides who signs in comes from the element the
 * signature covered (node-saml hands back only the signed bytes); the rest (Destination, algorithms) is checked on
 * the document as posted, which is at least as strict.
 */
export async function validateResponse(sp: SpConfig, response: ParsedResponse): Promise<AcceptedAssertion> {
  const { xml, doc } = response;
  if (!doc) throw new SamlRejection(`malformed XML: ${response.error}`);
  const root = doc.documentElement;
  if (!root) throw new SamlRejection('malformed XML: no root element');
  if (root.localName !== 'Response' || root.namespaceURI !== 'urn:oasis:names:tc:SAML:2.0:protocol') {
    throw new SamlRejection('not a SAML Response');
  }
  // Weak or symmetric algorithms are refused wherever they appear (HMAC would make the "key" anyone's guess).
  for (const method of Array.from(doc.getElementsByTagNameNS(DSIG, 'SignatureMethod'))) {
    if (!SIGNATURE_ALGORITHMS.has(method.getAttribute('Algorithm') ?? '')) throw new SamlRejection('signature algorithm refused');
  }
  for (const method of Array.from(doc.getElementsByTagNameNS(DSIG, 'DigestMethod'))) {
    if (!DIGEST_ALGORITHMS.has(method.getAttribute('Algorithm') ?? '')) throw new SamlRejection('digest algorithm refused');
  }
  const destination = root.getAttribute('Destination');
  if (destination && destination !== sp.acsUrl) throw new SamlRejection('Destination is not this ACS');
  const responseIssuer = Array.from(root.childNodes).find(
    (n): n is XmlElement => n.nodeType === n.ELEMENT_NODE && 'localName' in n && n.localName === 'Issuer',
  );
  if (responseIssuer && responseIssuer.textContent?.trim() !== sp.idpEntityId)
    throw new SamlRejection('Response Issuer mismatch');

  let profile: Awaited<ReturnType<SAML['validatePostResponseAsync']>>['profile'];
  try {
    ({ profile } = await (await samlFor(sp)).validatePostResponseAsync({ SAMLResponse: Buffer.from(xml).toString('base64') }));
  } catch (error) {
    throw new SamlRejection(`node-saml: ${errorMessage(error)}`);
  }
  if (!profile) throw new SamlRejection('no assertion');
  // From here on only the signed assertion is read.
  const signed = profile.getAssertion?.().Assertion;
  const assertion = isNode(signed) ? signed : undefined;
  if (!assertion) throw new SamlRejection('no signed assertion');
  const assertionId = stringOf(assertion.$?.ID);
  if (!assertionId || assertionId.length > 256) throw new SamlRejection('assertion ID missing or longer than 256');
  if (textOf(assertion.Issuer) !== sp.idpEntityId) throw new SamlRejection('assertion Issuer mismatch');
  const conditions = first(assertion.Conditions);
  if (!conditions?.AudienceRestriction) throw new SamlRejection('no AudienceRestriction');

  const subject = first(assertion.Subject);
  const nameIdNode = firstOf(subject?.NameID);
  const nameId = textIn(nameIdNode);
  if (!nameId || nameId !== profile.nameID) throw new SamlRejection('no NameID');
  // Never truncated: two NameIDs that differ past the limit must not become one identity.
  if (nameId.length > 1024) throw new SamlRejection('NameID longer than 1024');
  // A bearer confirmation for this ACS, live now (node-saml picked one whose times are valid; we also want Recipient).
  const now = Date.now();
  const confirmations = nodes(subject?.SubjectConfirmation)
    .map((c) => {
      const data = first(c.SubjectConfirmationData)?.$;
      return {
        method: stringOf(c.$?.Method),
        recipient: stringOf(data?.Recipient),
        notOnOrAfter: stringOf(data?.NotOnOrAfter),
        notBefore: stringOf(data?.NotBefore),
        inResponseTo: stringOf(data?.InResponseTo),
      };
    })
    .filter(
      (c) =>
        c.method === 'urn:oasis:names:tc:SAML:2.0:cm:bearer' &&
        c.recipient === sp.acsUrl &&
        c.notOnOrAfter !== undefined &&
        Date.parse(c.notOnOrAfter) + SKEW_MS > now &&
        (!c.notBefore || Date.parse(c.notBefore) - SKEW_MS <= now),
    );
  const confirmation = confirmations[0];
  if (!confirmation) throw new SamlRejection('no bearer SubjectConfirmation for this Recipient');
  const inResponseTo = confirmation.inResponseTo || null;
  const posted = root.getAttribute('InResponseTo') || null;
  if (posted !== inResponseTo) throw new SamlRejection('InResponseTo differs between Response and assertion');

  const limits = [confirmation.notOnOrAfter, conditions.$?.NotOnOrAfter]
    .filter((v): v is string => typeof v === 'string')
    .map((v) => Date.parse(v));
  const validUntil = new Date(Math.min(...limits) + SKEW_MS);

  const attributes: Record<string, string[]> = {};
  for (const statement of nodes(assertion.AttributeStatement)) {
    for (const attribute of nodes(statement.Attribute)) {
      const name = stringOf(attribute.$?.Name);
      if (!name) continue;
      const values = (Array.isArray(attribute.AttributeValue) ? attribute.AttributeValue : [])
        .map(textIn)
        .filter((v): v is string => typeof v === 'string');
      attributes[name] = [...(attributes[name] ?? []), ...values];
    }
  }
  return {
    assertionId,
    validUntil,
    nameId,
    nameIdFormat: isNode(nameIdNode) ? (stringOf(nameIdNode.$?.Format) ?? null) : null,
    inResponseTo,
    attributes,
  };
}

const EMAIL_ATTRIBUTES = [
  'email',
  'mail',
  'emailAddress',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'urn:oid:0.9.2342.19200300.100.1.3',
];
const NAME_ATTRIBUTES = [
  'name',
  'displayName',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  'urn:oid:2.16.840.1.113730.3.1.241',
];

/** The person's email: the configured attribute, else a usual one, else an email-shaped NameID. */
export function emailOf(assertion: AcceptedAssertion, attribute: string | null): string | null {
  const names = attribute ? [attribute] : EMAIL_ATTRIBUTES;
  for (const name of names) {
    const value = assertion.attributes[name]?.[0]?.trim();
    if (value) return value;
  }
  if (attribute) return null;
  return /^[^\s@]+@[^\s@]+$/.test(assertion.nameId) ? assertion.nameId : null;
}

export function displayNameOf(assertion: AcceptedAssertion, attribute: string | null): string | null {
  for (const name of attribute ? [attribute] : NAME_ATTRIBUTES) {
    const value = assertion.attributes[name]?.[0]?.trim();
    if (value) return value.slice(0, 200);
  }
  return null;
}
