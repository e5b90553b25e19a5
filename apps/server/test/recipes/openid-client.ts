import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import * as client from 'openid-client';

export interface GatehouseSettings {
  /** `{GATEHOUSE_BASE_URL}/oauth2/{application_id}` */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Where this app is served; `${appUrl}/callback` is the client's redirect URI. */
  appUrl: string;
}

interface Session {
  pkceVerifier?: string;
  state?: string;
  tokens?: client.TokenEndpointResponse & client.TokenEndpointResponseHelpers;
  expiresAt?: number;
  user?: { sub: string; email?: string; org?: string | null; org_role?: string | null };
}

export async function createApp(settings: GatehouseSettings): Promise<Server> {
  const config = await client.discovery(
    new URL(settings.issuer),
    settings.clientId,
    // Gatehouse signs ID tokens with Ed25519.
    { client_secret: settings.clientSecret, id_token_signed_response_alg: 'EdDSA' },
    client.ClientSecretBasic(settings.clientSecret),
    // A development server on http://localhost; never in production.
    settings.issuer.startsWith('http:') ? { execute: [client.allowInsecureRequests] } : undefined,
  );
  const redirectUri = `${settings.appUrl}/callback`;
  const sessions = new Map<string, Session>();

  const sessionOf = (req: IncomingMessage) => {
    const id = /(?:^|; )sid=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    return id ? sessions.get(id) : undefined;
  };

  return createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', settings.appUrl);
    try {
      if (url.pathname === '/login') {
        const session: Session = { pkceVerifier: client.randomPKCECodeVerifier(), state: client.randomState() };
        const id = randomUUID();
        sessions.set(id, session);
        const authorizationUrl = client.buildAuthorizationUrl(config, {
          redirect_uri: redirectUri,
          scope: 'openid email organization offline_access',
          // A refresh token (offline_access) is granted after the consent prompt.
          prompt: 'consent',
          code_challenge: await client.calculatePKCECodeChallenge(session.pkceVerifier!),
          code_challenge_method: 'S256',
          state: session.state!,
        });
        res.writeHead(302, { location: authorizationUrl.href, 'set-cookie': `sid=${id}; Path=/; HttpOnly; SameSite=Lax` });
        return res.end();
      }

      const session = sessionOf(req);
      if (url.pathname === '/callback' && session?.pkceVerifier) {
        const tokens = await client.authorizationCodeGrant(config, url, {
          pkceCodeVerifier: session.pkceVerifier,
          expectedState: session.state,
        });
        const { sub } = tokens.claims()!;
        // email and the organization claims come from userinfo.
        const { email, org, org_role } = await client.fetchUserInfo(config, tokens.access_token, sub);
        Object.assign(session, { pkceVerifier: undefined, state: undefined, tokens });
        session.expiresAt = Date.now() + (tokens.expiresIn() ?? 0) * 1000;
        session.user = { sub, email, org: org as string | null, org_role: org_role as string | null };
        res.writeHead(302, { location: '/me' });
        return res.end();
      }

      if (url.pathname === '/me' && session?.tokens && session.user) {
        // An expired access token is renewed with the refresh token (which rotates: keep the new one).
        if (Date.now() >= session.expiresAt! && session.tokens.refresh_token) {
          session.tokens = await client.refreshTokenGrant(config, session.tokens.refresh_token);
          session.expiresAt = Date.now() + (session.tokens.expiresIn() ?? 0) * 1000;
        }
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ user: session.user, expires_at: new Date(session.expiresAt!).toISOString() }));
      }

      res.writeHead(401, { 'content-type': 'text/plain' });
      res.end('Not signed in: /login');
    } catch (error) {
      console.error(error);
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end('Sign-in failed');
    }
  });
}
