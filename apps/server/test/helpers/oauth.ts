/** The REST steps of social sign-in in tests, and the browser's way back through the relay. */
import { send } from './oauth-idp.ts';
import type { TestApp, TestServer } from './server.ts';

export const APP_ORIGIN = 'http://app.test';
export const APP_CALLBACK = `${APP_ORIGIN}/oauth/callback`;

/**
 * What the browser does after the provider: the provider's redirect to our `/v1/auth/oauth/redirect` (registered as
 * `http://gatehouse.test/...`, the test server's configured base URL, here sent to where it really listens), then on to
 * the app's redirect URI. Answers the `code`, `state` and `error` the app's page receives.
 */
export async function throughRelay(server: TestServer, providerRedirect: string) {
  const relayed = new URL(providerRedirect);
  const relay = await send(`${server.url}${relayed.pathname}${relayed.search}`);
  if (relay.status !== 303) throw new Error(`the relay answered ${relay.status}: ${await relay.text()}`);
  const landing = new URL(relay.headers.get('location')!);
  return {
    landing,
    code: landing.searchParams.get('code') ?? undefined,
    state: landing.searchParams.get('state')!,
    error: landing.searchParams.get('error') ?? undefined,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// REST steps

export const putProvider = (app: TestApp, provider: string, body: Record<string, unknown>) =>
  app.rest('PUT', `/v1/applications/${app.id}/providers/oauth/${provider}`, body);

export const startOAuth = (app: TestApp, provider: string, redirectUri = APP_CALLBACK, extra: Record<string, unknown> = {}) =>
  app.rest('POST', `/v1/auth/oauth/${provider}/start`, { redirect_uri: redirectUri, ...extra }, { authorization: undefined });

export const callback = (app: TestApp, provider: string, body: Record<string, unknown>) =>
  app.rest('POST', `/v1/auth/oauth/${provider}/callback`, body, { authorization: undefined });

/** A fresh application whose allowed origin is the test app's. */
export const oauthApp = (server: TestServer, input: Record<string, unknown> = {}) =>
  server.createApp({ allowed_origins: [APP_ORIGIN], ...input });
