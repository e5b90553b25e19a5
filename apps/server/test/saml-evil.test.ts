import { beforeAll, describe, expect, it } from 'vitest';
import {
  type AssertionFields,
  b64,
  CALLBACK,
  complete,
  counts,
  createTestIdp,
  type KeyPair,
  makeKeyPair,
  NS,
  newSamlId,
  parse,
  postToAcs,
  responseXml,
  type SignOptions,
  samlApp,
  serialize,
  sign,
  start,
  type TestIdp,
} from './helpers/saml.ts';
import { ok, sql, type TestApp } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * An evil IdP (xml-crypto + @xmldom/xmldom, in the test) against the ACS: every forged, tampered, replayed or
 * misaddressed response is refused, and nobody — no user, no identity, no session, no code — comes of it.
 */
const suite = serverSuite({ smtp: false });

const DOMAIN = 'corp.com';
const VICTIM = `admin@${DOMAIN}`;
const ATTACKER = `mallory@${DOMAIN}`;

let idp: TestIdp;
let attackerKeys: KeyPair;
let app: TestApp;
let connection: { id: string; acs_url: string; metadata_url: string; name: string };
let other: { id: string };
let otherIdp: TestIdp;

beforeAll(async () => {
  idp = await createTestIdp();
  otherIdp = await createTestIdp();
  attackerKeys = await makeKeyPair();
  ({ app, connection } = await samlApp(suite.server, idp, { email_domain: DOMAIN }));
  other = await ok(
    app.rest('POST', '/v1/saml/connections', {
      name: 'Other Co',
      idp_entity_id: otherIdp.entityId,
      idp_sso_url: otherIdp.ssoUrl,
      idp_certificate: otherIdp.keys.certificate,
      email_domain: 'other.test',
    }),
    201,
  );
});

/** A request this browser started, so the response can answer it (InResponseTo). */
async function startRequest(connectionId = connection.id): Promise<string> {
  await ok(start(app, { connection_id: connectionId, redirect_uri: CALLBACK }));
  const [row] = await sql<{ id: string }>(
    suite.server,
    'select id from saml_requests where connection_id = ? order by created_at desc limit 1',
    [connectionId],
  );
  return row!.id;
}

/** What a real IdP would send for `nameId`, answering a fresh request; override any part. */
async function fields(overrides: Partial<AssertionFields> = {}): Promise<AssertionFields> {
  return {
    issuer: idp.entityId,
    audience: connection.metadata_url,
    recipient: connection.acs_url,
    destination: connection.acs_url,
    nameId: ATTACKER,
    inResponseTo: await startRequest(),
    attributes: { email: overrides.nameId ?? ATTACKER },
    ...overrides,
  };
}

const signedBy = (keys: KeyPair, options: Partial<SignOptions> = {}) => ({
  privateKeyPem: keys.privateKeyPem,
  certificatePem: keys.certificatePem,
  ...options,
});

/** Posts a forged response and asserts it was refused with nothing created. */
async function expectRefused(xml: string, label: string) {
  const before = await counts(suite.server, app);
  const codesBefore = await codeCount();
  const acs = await postToAcs(suite.server.url, connection.id, { SAMLResponse: b64(xml) });
  expect(acs.code, `${label}: ${acs.location ?? JSON.stringify(acs.body)}`).toBeNull();
  if (acs.status === 303) expect(acs.error, label).toMatch(/^(saml_response_invalid|access_denied)$/);
  else {
    expect([401, 413], label).toContain(acs.status);
    expect(acs.body.success, label).toBe(false);
  }
  expect(await counts(suite.server, app), label).toEqual(before);
  expect(await codeCount(), label).toBe(codesBefore);
  return acs;
}

const codeCount = async () =>
  (
    await sql<{ n: number }>(suite.server, 'select count(*)::int as n from saml_codes where connection_id = ?', [connection.id])
  )[0]!.n;

/** The positive control: the same construction, untampered, is accepted (so every refusal below is the attack's). */
async function expectAccepted(xml: string) {
  const acs = await postToAcs(suite.server.url, connection.id, { SAMLResponse: b64(xml) });
  expect(acs.code, acs.location ?? JSON.stringify(acs.body)).toBeTruthy();
  return acs.code!;
}

describe('the evil IdP', () => {
  it('control: a correctly signed assertion (or response) is accepted and signs in the signed NameID', async () => {
    const code = await expectAccepted(sign(responseXml(await fields()), signedBy(idp.keys)));
    const result = await ok(complete(app, code));
    if (result.status !== 'complete') throw new Error(result.status);
    expect(result.user.primary_email).toBe(ATTACKER);
    await expectAccepted(sign(responseXml(await fields()), signedBy(idp.keys, { target: 'response' })));
  });

  it('refuses an unsigned response, a removed or emptied SignatureValue, and a tampered signed assertion', async () => {
    await expectRefused(responseXml(await fields({ nameId: VICTIM })), 'unsigned');
    const signed = sign(responseXml(await fields()), signedBy(idp.keys));
    await expectRefused(signed.replace(/<ds:SignatureValue>[^<]*<\/ds:SignatureValue>/, ''), 'removed SignatureValue');
    await expectRefused(
      signed.replace(/<ds:SignatureValue>[^<]*<\/ds:SignatureValue>/, '<ds:SignatureValue></ds:SignatureValue>'),
      'emptied',
    );
    const fresh = sign(responseXml(await fields()), signedBy(idp.keys));
    await expectRefused(fresh.replaceAll(ATTACKER, VICTIM), 'NameID edited after signing');
  });

  it('trusts only the stored certificate: not the one in KeyInfo, not another connection’s IdP key', async () => {
    await expectRefused(sign(responseXml(await fields({ nameId: VICTIM })), signedBy(attackerKeys)), 'KeyInfo certificate');
    await expectRefused(sign(responseXml(await fields({ nameId: VICTIM })), signedBy(otherIdp.keys)), 'another connection’s key');
    // The other connection's own IdP, posting to this connection's ACS with its correct audience, is refused too.
    await expectRefused(
      sign(responseXml(await fields({ nameId: VICTIM, issuer: otherIdp.entityId })), signedBy(otherIdp.keys)),
      'other IdP as itself',
    );
  });

  it('refuses a wrong audience, destination, recipient or issuer (all signed)', async () => {
    const cases: Array<[string, Partial<AssertionFields>]> = [
      ['audience', { audience: 'https://someone-else.example/sp' }],
      ['destination', { destination: `${connection.acs_url.replace(connection.id, other.id)}` }],
      ['recipient', { recipient: 'https://someone-else.example/acs' }],
      ['issuer', { issuer: 'https://impostor.example/idp' }],
    ];
    for (const [label, override] of cases) {
      await expectRefused(sign(responseXml(await fields(override)), signedBy(idp.keys)), label);
    }
  });

  it('refuses expired and not-yet-valid assertions (beyond the 60 s skew)', async () => {
    await expectRefused(sign(responseXml(await fields({ notOnOrAfter: -61_000 - 5_000 })), signedBy(idp.keys)), 'expired');
    await expectRefused(
      sign(responseXml(await fields({ notBefore: 120_000, notOnOrAfter: 600_000 })), signedBy(idp.keys)),
      'not yet valid',
    );
  });

  it('refuses a replayed assertion, and an InResponseTo of another request, connection or none we know', async () => {
    const signed = sign(responseXml(await fields()), signedBy(idp.keys));
    await expectAccepted(signed);
    await expectRefused(signed, 'replay');
    // The same assertion ID answering a new, live request: only the replay cache can refuse it.
    const assertionId = newSamlId();
    await expectAccepted(sign(responseXml(await fields({ assertionId })), signedBy(idp.keys)));
    await expectRefused(sign(responseXml(await fields({ assertionId })), signedBy(idp.keys)), 'assertion ID replayed');
    await expectRefused(sign(responseXml(await fields({ inResponseTo: newSamlId() })), signedBy(idp.keys)), 'unknown request');
    const othersRequest = await startRequest(other.id);
    await expectRefused(
      sign(responseXml(await fields({ inResponseTo: othersRequest })), signedBy(idp.keys)),
      'another connection’s request',
    );
    // An unsolicited response (no InResponseTo) when the connection does not allow IdP-initiated sign-in.
    await expectRefused(sign(responseXml(await fields({ inResponseTo: null })), signedBy(idp.keys)), 'IdP-initiated');
  });

  it('reads the NameID from the signed bytes: comment and processing-instruction injection do not shorten it', async () => {
    const evil = `${VICTIM}.evil.com`;
    const signed = sign(responseXml(await fields({ nameId: evil, attributes: { email: evil } })), signedBy(idp.keys));
    // A comment survives exclusive c14n's signature check (comments are not signed), so the signature still verifies.
    await expectRefused(signed.replaceAll(evil, `${VICTIM}<!---->.evil.com`), 'comment');
    const signedPi = sign(responseXml(await fields({ nameId: evil, attributes: { email: evil } })), signedBy(idp.keys));
    await expectRefused(signedPi.replaceAll(evil, `${VICTIM}<?x y?>.evil.com`), 'processing instruction');
    const [victim] = await sql(suite.server, 'select id from users where application_id = ? and email_normalized = ?', [
      app.id,
      VICTIM,
    ]);
    expect(victim).toBeUndefined();
  });

  it('refuses rsa-sha1 and HMAC signatures', async () => {
    await expectRefused(
      sign(
        responseXml(await fields()),
        signedBy(idp.keys, {
          signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#rsa-sha1',
          digestAlgorithm: 'http://www.w3.org/2000/09/xmldsig#sha1',
        }),
      ),
      'rsa-sha1',
    );
    await expectRefused(
      sign(responseXml(await fields({ nameId: VICTIM })), {
        privateKeyPem: '',
        hmacKey: idp.keys.certificatePem,
        signatureAlgorithm: 'http://www.w3.org/2000/09/xmldsig#hmac-sha1',
      }),
      'HMAC keyed with the public certificate',
    );
  });

  it('refuses DOCTYPE (XXE, billion laughs) before parsing, and responses over 256 KB with 413', async () => {
    const signed = sign(responseXml(await fields()), signedBy(idp.keys));
    const xxe = await expectRefused(
      `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${signed.replace(ATTACKER, '&x;')}`,
      'XXE',
    );
    expect(xxe.status).toBe(401);
    const laughs = Array.from({ length: 9 }, (_, i) => `<!ENTITY l${i + 1} "${`&l${i};`.repeat(10)}">`).join('');
    await expectRefused(`<!DOCTYPE r [<!ENTITY l0 "lol">${laughs}]>${signed.replace(ATTACKER, '&l9;')}`, 'billion laughs');
    const big = sign(
      responseXml(await fields({ attributes: { email: ATTACKER, padding: 'x'.repeat(300 * 1024) } })),
      signedBy(idp.keys),
    );
    const oversized = await expectRefused(big, 'oversized');
    expect(oversized.status).toBe(413);
    expect(oversized.body.error.code).toBe('payload_too_large');
  });

  it('refuses an email outside email_domain, and every response while the connection is disabled', async () => {
    const outside = await expectRefused(
      sign(responseXml(await fields({ nameId: 'someone@evil.com' })), signedBy(idp.keys)),
      'outside domain',
    );
    expect(outside.error).toBe('access_denied');
    const pending = await fields();
    await ok(app.rest('POST', `/v1/saml/connections/${connection.id}/disable`));
    try {
      await expectRefused(sign(responseXml(pending), signedBy(idp.keys)), 'disabled');
    } finally {
      await ok(app.rest('POST', `/v1/saml/connections/${connection.id}/enable`));
    }
  });

  describe('signature wrapping (XSW1–XSW8): the attacker holds a genuine assertion for themselves and wants the victim', () => {
    const byLocal = (node: any, local: string): any[] =>
      Array.from(node.childNodes as ArrayLike<any>).filter((n: any) => n.localName === local);
    const nameIdOf = (assertion: any) => byLocal(byLocal(assertion, 'Subject')[0], 'NameID')[0];
    const toVictim = (assertion: any) => {
      nameIdOf(assertion).textContent = VICTIM;
      for (const value of Array.from(assertion.getElementsByTagNameNS(NS.saml, 'AttributeValue')) as any[]) {
        if (value.textContent === ATTACKER) value.textContent = VICTIM;
      }
    };
    const stripSignature = (node: any) => {
      for (const s of byLocal(node, 'Signature')) node.removeChild(s);
    };
    const objectIn = (doc: any, signature: any, child: any) => {
      const object = doc.createElementNS(NS.ds, 'ds:Object');
      object.appendChild(child);
      signature.appendChild(object);
    };

    /** A genuine response for the attacker, signed on the assertion (or on the Response). */
    async function genuine(target: 'assertion' | 'response') {
      const xml = sign(responseXml(await fields()), signedBy(idp.keys, { target }));
      const doc = parse(xml);
      const response = doc.documentElement as any;
      return { doc, response, assertion: byLocal(response, 'Assertion')[0] };
    }

    const variants: Record<string, () => Promise<string>> = {
      // Response signature: the signed original moves into the Signature; the outer Response is the attacker's.
      XSW1: async () => {
        const { doc, response, assertion } = await genuine('response');
        const original = response.cloneNode(true);
        stripSignature(original);
        response.setAttribute('ID', newSamlId());
        toVictim(assertion);
        objectIn(doc, byLocal(response, 'Signature')[0], original);
        return serialize(doc);
      },
      // Response signature: the original as a detached sibling before the Signature.
      XSW2: async () => {
        const { doc, response, assertion } = await genuine('response');
        const original = response.cloneNode(true);
        stripSignature(original);
        response.setAttribute('ID', newSamlId());
        toVictim(assertion);
        response.insertBefore(original, byLocal(response, 'Signature')[0]);
        return serialize(doc);
      },
      // Assertion signature: an evil assertion (new ID) before the genuine one.
      XSW3: async () => {
        const { doc, response, assertion } = await genuine('assertion');
        const evil = assertion.cloneNode(true);
        evil.setAttribute('ID', newSamlId());
        stripSignature(evil);
        toVictim(evil);
        response.insertBefore(evil, assertion);
        return serialize(doc);
      },
      // The genuine assertion inside the evil one.
      XSW4: async () => {
        const { doc, response, assertion } = await genuine('assertion');
        const evil = assertion.cloneNode(true);
        evil.setAttribute('ID', newSamlId());
        stripSignature(evil);
        toVictim(evil);
        response.replaceChild(evil, assertion);
        evil.appendChild(assertion);
        return serialize(doc);
      },
      // The signed assertion edited in place; an untouched copy (no signature) appended to the Response.
      XSW5: async () => {
        const { doc, response, assertion } = await genuine('assertion');
        const copy = assertion.cloneNode(true);
        stripSignature(copy);
        toVictim(assertion);
        response.appendChild(copy);
        return serialize(doc);
      },
      // The signed assertion edited in place; the untouched copy inside its own Signature.
      XSW6: async () => {
        const { doc, assertion } = await genuine('assertion');
        const copy = assertion.cloneNode(true);
        stripSignature(copy);
        toVictim(assertion);
        objectIn(doc, byLocal(assertion, 'Signature')[0], copy);
        return serialize(doc);
      },
      // The genuine assertion hidden in an Extensions element; an evil assertion (same ID, unsigned) in its place.
      XSW7: async () => {
        const { doc, response, assertion } = await genuine('assertion');
        const extensions = doc.createElementNS(NS.samlp, 'samlp:Extensions');
        const evil = assertion.cloneNode(true);
        stripSignature(evil);
        toVictim(evil);
        response.replaceChild(evil, assertion);
        extensions.appendChild(assertion);
        response.insertBefore(extensions, evil);
        return serialize(doc);
      },
      // The signed assertion edited; its Signature carries an Object with the untouched original.
      XSW8: async () => {
        const { doc, assertion } = await genuine('assertion');
        const original = assertion.cloneNode(true);
        stripSignature(original);
        toVictim(assertion);
        const signature = byLocal(assertion, 'Signature')[0];
        objectIn(doc, signature, original);
        return serialize(doc);
      },
    };

    for (const [name, build] of Object.entries(variants)) {
      it(`${name} is refused`, async () => {
        await expectRefused(await build(), name);
        const [victim] = await sql(suite.server, 'select id from users where application_id = ? and email_normalized = ?', [
          app.id,
          VICTIM,
        ]);
        expect(victim).toBeUndefined();
      });
    }
  });
});
