/**
 * A SAML identity provider for development (`gatehouse saml test-idp`): samlify in IdP mode, a fresh RSA key pair and
 * self-signed certificate per run, and a few made-up people to pick from. It signs real assertions, so a laptop can
 * run the whole SSO round trip — and the admin portal's connection test — with no IdP account anywhere.
 */
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as x509 from '@peculiar/x509';
import * as samlify from 'samlify';

x509.cryptoProvider.set(webcrypto as unknown as Crypto);
// samlify validates XML against the SAML schemas only through a validator it is given. The test IdP reads only the
// AuthnRequest of a service provider it was pointed at; Gatehouse, the side that matters, validates what it receives.
samlify.setSchemaValidator({ validate: async () => 'not validated: a development IdP' });

export interface TestPerson {
  email: string;
  firstName: string;
  lastName: string;
  /** Group names, sent as the `groups` attribute. */
  groups: string[];
}

/** The made-up people of the pick-a-person page, at `domain`. */
export const testPeople = (domain: string): TestPerson[] => [
  { email: `ada@${domain}`, firstName: 'Ada', lastName: 'Lovelace', groups: ['Engineering', 'Admins'] },
  { email: `grace@${domain}`, firstName: 'Grace', lastName: 'Hopper', groups: ['Engineering'] },
  { email: `alan@${domain}`, firstName: 'Alan', lastName: 'Turing', groups: ['Research'] },
];

export interface TestIdpServer {
  /** `http://localhost:<port>`: the IdP's entity id is `<url>/metadata`, its SSO URL `<url>/sso`. */
  url: string;
  entityId: string;
  ssoUrl: string;
  metadataXml: string;
  /** base64 DER of the signing certificate. */
  certificate: string;
  people: TestPerson[];
  /** The service provider (a Gatehouse connection) whose requests it answers: its entity id and ACS URL. */
  trust(sp: { entityId: string; acsUrl: string }): void;
  close(): Promise<void>;
}

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';
const BINDING_REDIRECT = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const BINDING_POST = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

const pem = (label: string, der: ArrayBuffer) =>
  `-----BEGIN ${label}-----\n${(
    Buffer.from(der)
      .toString('base64')
      .match(/.{1,64}/g) ?? []
  ).join('\n')}\n-----END ${label}-----\n`;

async function keyPair() {
  const algorithm = {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomBytes(8).toString('hex'),
    name: 'CN=Gatehouse test IdP',
    notBefore: new Date(Date.now() - 60_000),
    notAfter: new Date(Date.now() + 365 * 86_400_000),
    signingAlgorithm: algorithm,
    // webcrypto's CryptoKeyPair is the one @peculiar/x509 takes (its types name the DOM's).
    keys: keys as unknown as CryptoKeyPair,
  });
  return {
    privateKeyPem: pem('PRIVATE KEY', await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)),
    certificatePem: cert.toString('pem'),
    certificate: Buffer.from(cert.rawData).toString('base64'),
  };
}

const escapeHtml = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

const PAGE_STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#111827}' +
  'button{display:block;width:100%;margin:.5rem 0;padding:.75rem;font:inherit;text-align:left;border:1px solid #d1d5db;' +
  'border-radius:8px;background:#fff;cursor:pointer}button:hover{background:#f3f4f6}.muted{color:#4b5563;font-size:.9rem}';

const page = (title: string, body: string) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title><style>${PAGE_STYLE}</style></head><body><main><h1>${escapeHtml(title)}</h1>${body}</main></body></html>`;

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > 256 * 1024) throw new Error('form too large');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Starts the IdP on `port` (0: any free one) of localhost. */
export async function startTestIdp(options: { port?: number; domain?: string; host?: string } = {}): Promise<TestIdpServer> {
  const domain = options.domain ?? 'example.test';
  const people = testPeople(domain);
  const keys = await keyPair();
  let sp: ReturnType<typeof samlify.ServiceProvider> | undefined;
  let spEndpoints = { entityId: '', acsUrl: '' };

  let idp: ReturnType<typeof samlify.IdentityProvider> | undefined;
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      response.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        page('The test IdP cannot answer this', `<p>${escapeHtml(error instanceof Error ? error.message : String(error))}</p>`),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve);
  });
  const url = `http://localhost:${(server.address() as AddressInfo).port}`;
  const entityId = `${url}/metadata`;
  const ssoUrl = `${url}/sso`;
  idp = samlify.IdentityProvider({
    entityID: entityId,
    signingCert: keys.certificatePem,
    privateKey: keys.privateKeyPem,
    isAssertionEncrypted: false,
    requestSignatureAlgorithm: RSA_SHA256,
    nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
    singleSignOnService: [
      { Binding: BINDING_REDIRECT, Location: ssoUrl },
      { Binding: BINDING_POST, Location: ssoUrl },
    ],
    loginResponseTemplate: {
      context: samlify.SamlLib.defaultLoginResponseTemplate.context,
      attributes: [
        {
          name: 'email',
          valueTag: 'email',
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
          valueXsiType: 'xs:string',
        },
        {
          name: 'firstName',
          valueTag: 'firstName',
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
          valueXsiType: 'xs:string',
        },
        {
          name: 'lastName',
          valueTag: 'lastName',
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
          valueXsiType: 'xs:string',
        },
        {
          name: 'name',
          valueTag: 'name',
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
          valueXsiType: 'xs:string',
        },
        {
          name: 'groups',
          valueTag: 'groups',
          nameFormat: 'urn:oasis:names:tc:SAML:2.0:attrname-format:basic',
          valueXsiType: 'xs:string',
        },
      ],
    },
  } as never);
  const metadataXml = idp.getMetadata();

  async function handle(request: IncomingMessage, response: ServerResponse) {
    const here = new URL(request.url ?? '/', url);
    if (request.method === 'GET' && here.pathname === '/metadata') {
      response.writeHead(200, { 'content-type': 'application/samlmetadata+xml' });
      return void response.end(metadataXml);
    }
    if (here.pathname !== '/sso' || !idp) {
      response.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
      return void response.end(
        page('Gatehouse test IdP', `<p>Sign in from your app: this IdP answers its SAML requests at ${escapeHtml(ssoUrl)}.</p>`),
      );
    }
    const trusted = sp;
    if (!trusted) throw new Error('no service provider is trusted yet');
    if (request.method === 'GET') {
      const samlRequest = here.searchParams.get('SAMLRequest') ?? '';
      const relayState = here.searchParams.get('RelayState') ?? '';
      // Parsed once here so that a malformed request is refused before anyone is picked.
      await idp.parseLoginRequest(trusted, 'redirect', { query: Object.fromEntries(here.searchParams) } as never);
      const buttons = people
        .map(
          (p, i) =>
            `<button type="submit" name="person" value="${i}"><strong>${escapeHtml(`${p.firstName} ${p.lastName}`)}</strong><br><span class="muted">${escapeHtml(p.email)} · ${escapeHtml(p.groups.join(', '))}</span></button>`,
        )
        .join('');
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      return void response.end(
        page(
          'Pick a person',
          `<p class="muted">Gatehouse test IdP — for development only. Whoever you pick is signed in, no password asked.</p>` +
            `<form method="post" action="/sso"><input type="hidden" name="SAMLRequest" value="${escapeHtml(samlRequest)}">` +
            `<input type="hidden" name="RelayState" value="${escapeHtml(relayState)}">` +
            `<input type="hidden" name="SigAlg" value="${escapeHtml(here.searchParams.get('SigAlg') ?? '')}">${buttons}</form>`,
        ),
      );
    }
    if (request.method === 'POST') {
      const form = await readForm(request);
      const person = people[Number(form.get('person'))];
      if (!person) throw new Error('pick one of the people');
      const query: Record<string, string> = { SAMLRequest: form.get('SAMLRequest') ?? '' };
      const relayState = form.get('RelayState');
      if (relayState) query.RelayState = relayState;
      const info = await idp.parseLoginRequest(trusted, 'redirect', { query } as never);
      const user = {
        email: person.email,
        firstName: person.firstName,
        lastName: person.lastName,
        name: `${person.firstName} ${person.lastName}`,
        groups: person.groups.join(','),
      };
      const issuer = idp;
      const result = (await idp.createLoginResponse(trusted, info as never, 'post', user as never, (template: string) =>
        customTags(issuer, spEndpoints, info as never, user, template),
      )) as { context: string; entityEndpoint: string };
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      // The browser posts the signed response to the ACS (HTTP-POST binding): at once with JavaScript, else a click.
      return void response.end(
        page(
          `Signing in as ${person.firstName}`,
          `<form id="post" method="post" action="${escapeHtml(result.entityEndpoint)}"><input type="hidden" name="SAMLResponse" value="${escapeHtml(result.context)}">` +
            (relayState ? `<input type="hidden" name="RelayState" value="${escapeHtml(relayState)}">` : '') +
            `<button type="submit">Continue to the app</button></form><script>document.getElementById('post').submit()</script>`,
        ),
      );
    }
    response.writeHead(405).end();
  }

  return {
    url,
    entityId,
    ssoUrl,
    metadataXml,
    certificate: keys.certificate,
    people,
    trust({ entityId: spEntityId, acsUrl }) {
      spEndpoints = { entityId: spEntityId, acsUrl };
      sp = samlify.ServiceProvider({
        entityID: spEntityId,
        authnRequestsSigned: false,
        wantAssertionsSigned: true,
        assertionConsumerService: [{ Binding: BINDING_POST, Location: acsUrl }],
        nameIDFormat: ['urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress'],
      } as never);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * samlify's default response, with the person's attributes filled in (its template replacer fills only the standard
 * tags; the attribute values are `{attr<Name>}` tags of the template).
 */
function customTags(
  idp: ReturnType<typeof samlify.IdentityProvider>,
  sp: { entityId: string; acsUrl: string },
  info: { extract?: { request?: { id?: string } } },
  user: Record<string, string>,
  template: string,
) {
  const now = new Date();
  const later = new Date(now.getTime() + 5 * 60_000);
  const id = `_${randomBytes(20).toString('hex')}`;
  const assertionId = `_${randomBytes(20).toString('hex')}`;
  const acs = sp.acsUrl;
  const tags: Record<string, string> = {
    ID: id,
    AssertionID: assertionId,
    Destination: acs,
    Audience: sp.entityId,
    EntityID: sp.entityId,
    SubjectRecipient: acs,
    Issuer: idp.entityMeta.getEntityID(),
    IssueInstant: now.toISOString(),
    AssertionConsumerServiceURL: acs,
    StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    ConditionsNotBefore: new Date(now.getTime() - 30_000).toISOString(),
    ConditionsNotOnOrAfter: later.toISOString(),
    SubjectConfirmationDataNotOnOrAfter: later.toISOString(),
    NameIDFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    NameID: user.email ?? '',
    InResponseTo: info.extract?.request?.id ?? '',
    AuthnStatement: '',
    attrEmail: user.email ?? '',
    attrFirstName: user.firstName ?? '',
    attrLastName: user.lastName ?? '',
    attrName: user.name ?? '',
    attrGroups: user.groups ?? '',
  };
  return { id, context: samlify.SamlLib.replaceTagsByValue(template, tags) };
}
