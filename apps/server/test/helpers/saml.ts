import { expect } from 'vitest';
import type { TestIdp } from './saml-idp.ts';
import { ok, sql, type TestApp, type TestServer } from './server.ts';
import { endUser, type SignInResult } from './sign-in.ts';

export * from './saml-idp.ts';

// ——— Gatehouse's side ———

/** An application with an allowed origin and a SAML connection to `idp`; answers the connection and our SP metadata. */
export const ORIGIN = 'https://app.example.com';
export const CALLBACK = `${ORIGIN}/sso/callback`;

export async function samlApp(server: TestServer, idp: TestIdp, connection: Record<string, unknown> = {}) {
  const app = await server.createApp({ allowed_origins: [ORIGIN] });
  const created = await ok(
    app.rest('POST', '/v1/saml/connections', {
      name: 'Acme Corp',
      idp_entity_id: idp.entityId,
      idp_sso_url: idp.ssoUrl,
      idp_certificate: idp.keys.certificate,
      ...connection,
    }),
    201,
  );
  const metadata = await fetch(`${server.url}/v1/saml/metadata/${created.id}`);
  expect(metadata.status).toBe(200);
  expect(metadata.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
  return { app, connection: created, spMetadata: await metadata.text() };
}

export const start = (app: TestApp, body: Record<string, unknown>) =>
  endUser<{ redirect_url: string }>(app, 'POST', '/v1/auth/sso/start', body);
export const complete = (app: TestApp, code: string) => endUser<SignInResult>(app, 'POST', '/v1/auth/sso/complete', { code });

export async function counts(server: TestServer, app: TestApp) {
  const [row] = await sql<{ users: number; identities: number; sessions: number }>(
    server,
    `select (select count(*)::int from users where application_id = ?) as users,
            (select count(*)::int from identities where application_id = ?) as identities,
            (select count(*)::int from sessions where application_id = ?) as sessions`,
    [app.id, app.id, app.id],
  );
  return row!;
}
