/**
 * SAML peers for tests, with no server dependency (the CLI tests use them too): a real IdP (samlify), key pairs and
 * certificates, the browser's form post to the ACS, and the evil IdP's hand-built, xml-crypto-signed responses.
 */
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { DOMParser, XMLSerializer } from '@xmldom/xmldom';
import * as samlify from 'samlify';
import { SignedXml } from 'xml-crypto';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

export interface KeyPair {
  privateKeyPem: string;
  /** base64 DER, as the API takes it */
  certificate: string;
  certificatePem: string;
}

const pem = (label: string, der: ArrayBuffer | Buffer) =>
  `-----BEGIN ${label}-----\n${Buffer.from(der as ArrayBuffer)
    .toString('base64')
    .match(/.{1,64}/g)!
    .join('\n')}\n-----END ${label}-----\n`;

/** A fresh RSA key pair and a self-signed certificate for it (what an IdP administrator would export). */
export async function makeKeyPair(bits = 2048, days = 365): Promise<KeyPair> {
  const algorithm = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: bits,
  };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: `CN=Test IdP ${randomBytes(4).toString('hex')}`,
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + days * 86_400_000),
    signingAlgorithm: algorithm,
    keys: keys as unknown as CryptoKeyPair,
  });
  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', keys.privateKey);
  return {
    privateKeyPem: pem('PRIVATE KEY', pkcs8),
    certificate: Buffer.from(cert.rawData).toString('base64'),
    certificatePem: cert.toString('pem'),
  };
}

samlify.setSchemaValidator({ validate: async () => 'skipped: the test IdP trusts its own SP metadata' });

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

export interface TestIdp {
  entityId: string;
  ssoUrl: string;
  keys: KeyPair;
  metadataXml: string;
  /**
   * The IdP's answer to an AuthnRequest (the `redirect_url` our `sso/start` gave), or an unsolicited (IdP-initiated)
   * response when `redirectUrl` is null: the form fields its page would post to our ACS.
   */
  respond(
    spMetadataXml: string,
    redirectUrl: string | null,
    user: { email: string },
    relayState?: string,
  ): Promise<{ SAMLResponse: string; RelayState?: string; acs: string }>;
}

/** A real, independent SAML IdP (samlify in IdP mode) with its own key pair. */
export async function createTestIdp(options: { entityId?: string; ssoUrl?: string; keys?: KeyPair } = {}): Promise<TestIdp> {
  const keys = options.keys ?? (await makeKeyPair());
  const entityId = options.entityId ?? `https://idp-${randomBytes(4).toString('hex')}.example.com/saml`;
  const ssoUrl = options.ssoUrl ?? `${entityId}/sso`;
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    signingCert: keys.certificatePem,
    privateKey: keys.privateKeyPem,
    isAssertionEncrypted: false,
    requestSignatureAlgorithm: RSA_SHA256,
    nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
    singleSignOnService: [
      { Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: ssoUrl },
      { Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', Location: ssoUrl },
    ],
    singleLogoutService: [{ Binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect', Location: `${entityId}/slo` }],
  } as never);
  return {
    entityId,
    ssoUrl,
    keys,
    metadataXml: idp.getMetadata(),
    async respond(spMetadataXml, redirectUrl, user, relayState) {
      const sp = samlify.ServiceProvider({ metadata: spMetadataXml });
      let requestInfo: Record<string, unknown> = {};
      let relay = relayState;
      if (redirectUrl) {
        const query = Object.fromEntries(new URL(redirectUrl).searchParams);
        requestInfo = (await idp.parseLoginRequest(sp, 'redirect', { query } as never)) as unknown as Record<string, unknown>;
        relay ??= query.RelayState;
      }
      const response = (await idp.createLoginResponse(sp, requestInfo as never, 'post', user as never)) as {
        context: string;
        entityEndpoint: string;
      };
      return {
        SAMLResponse: response.context,
        ...(relay !== undefined ? { RelayState: relay } : {}),
        acs: response.entityEndpoint,
      };
    },
  };
}

/** Posts the IdP's form to our ACS (as the IdP's auto-submitting page would), without following the redirect. */
export async function postToAcs(baseUrl: string, connectionId: string, form: Record<string, string>) {
  const response = await fetch(`${baseUrl}/v1/saml/acs/${connectionId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form).toString(),
    redirect: 'manual',
  });
  const text = await response.text();
  const location = response.headers.get('location');
  const url = location ? new URL(location) : null;
  return {
    status: response.status,
    location,
    code: url?.searchParams.get('code') ?? null,
    error: url?.searchParams.get('error') ?? null,
    body: text ? safeJson(text) : undefined,
  };
}

const safeJson = (text: string) => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

// ——— The evil IdP: hand-built responses, signed with xml-crypto, then tampered with ———

const NS = {
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
};

export interface AssertionFields {
  issuer: string;
  audience: string;
  recipient: string;
  destination: string;
  nameId: string;
  inResponseTo?: string | null;
  attributes?: Record<string, string>;
  /** ms from now */
  notBefore?: number;
  notOnOrAfter?: number;
  responseId?: string;
  assertionId?: string;
}

const esc = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
export const newSamlId = () => `_${randomBytes(16).toString('hex')}`;

/** An unsigned Response carrying one Assertion, shaped like real IdPs send. */
export function responseXml(f: AssertionFields): string {
  const responseId = f.responseId ?? newSamlId();
  const assertionId = f.assertionId ?? newSamlId();
  const irt = f.inResponseTo ? ` InResponseTo="${esc(f.inResponseTo)}"` : '';
  const notBefore = at(f.notBefore ?? -30_000);
  const notOnOrAfter = at(f.notOnOrAfter ?? 300_000);
  const attributes = Object.entries(f.attributes ?? {})
    .map(
      ([name, value]) =>
        `<saml:Attribute Name="${esc(name)}"><saml:AttributeValue>${esc(value)}</saml:AttributeValue></saml:Attribute>`,
    )
    .join('');
  return (
    `<samlp:Response xmlns:samlp="${NS.samlp}" xmlns:saml="${NS.saml}" ID="${responseId}" Version="2.0" IssueInstant="${at(0)}" Destination="${esc(f.destination)}"${irt}>` +
    `<saml:Issuer>${esc(f.issuer)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    `<saml:Assertion ID="${assertionId}" Version="2.0" IssueInstant="${at(0)}">` +
    `<saml:Issuer>${esc(f.issuer)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${esc(f.nameId)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${notOnOrAfter}" Recipient="${esc(f.recipient)}"${irt}/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${notBefore}" NotOnOrAfter="${notOnOrAfter}"><saml:AudienceRestriction><saml:Audience>${esc(f.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${at(0)}" SessionIndex="${assertionId}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
    `</saml:Assertion></samlp:Response>`
  );
}

export interface SignOptions {
  privateKeyPem: string;
  /** The certificate put in KeyInfo (an attacker's choice) */
  certificatePem?: string;
  signatureAlgorithm?: string;
  digestAlgorithm?: string;
  /** What to sign: the Assertion (default) or the whole Response. */
  target?: 'assertion' | 'response';
  /** An HMAC key instead of RSA (the HMAC test). */
  hmacKey?: string;
}

/** Signs the Assertion (or the Response) of `xml` enveloped, placing the Signature after the Issuer as SAML requires. */
export function sign(xml: string, options: SignOptions): string {
  const target = options.target ?? 'assertion';
  const xpath =
    target === 'assertion' ? "/*[local-name(.)='Response']/*[local-name(.)='Assertion']" : "/*[local-name(.)='Response']";
  const signer = new SignedXml({
    privateKey: options.hmacKey ?? options.privateKeyPem,
    publicCert: options.certificatePem,
    signatureAlgorithm: options.signatureAlgorithm ?? 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  // xml-crypto refuses HMAC unless asked (key confusion): the evil IdP asks.
  if (options.hmacKey) signer.enableHMAC();
  signer.addReference({
    xpath,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: options.digestAlgorithm ?? 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  signer.computeSignature(xml, { location: { reference: `${xpath}/*[local-name(.)='Issuer']`, action: 'after' }, prefix: 'ds' });
  return signer.getSignedXml();
}

export const b64 = (xml: string) => Buffer.from(xml, 'utf8').toString('base64');

export const parse = (xml: string) => new DOMParser().parseFromString(xml, 'text/xml');
export const serialize = (node: unknown) => new XMLSerializer().serializeToString(node as never);
export { NS };
