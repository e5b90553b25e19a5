import { Auth, type AuthConfig } from '@auth/core';
import type { OIDCConfig } from '@auth/core/providers';

export interface GatehouseSettings {
  /** `{GATEHOUSE_BASE_URL}/oauth2/{application_id}` */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Encrypts Auth.js's session cookie (AUTH_SECRET): 32 random bytes or more. */
  secret: string;
}

/** What Gatehouse's userinfo answers for the scopes asked below. */
interface GatehouseProfile extends Record<string, unknown> {
  sub: string;
  email?: string;
  org?: string | null;
  org_role?: string | null;
}

declare module '@auth/core/jwt' {
  interface JWT {
    org?: string | null;
    org_role?: string | null;
    access_token?: string;
    refresh_token?: string;
    expires_at?: number;
    error?: 'RefreshTokenError';
  }
}

declare module '@auth/core/types' {
  interface Session {
    org?: string | null;
    org_role?: string | null;
    error?: 'RefreshTokenError';
  }
}

export function gatehouseAuth(settings: GatehouseSettings): AuthConfig {
  const gatehouse: OIDCConfig<GatehouseProfile> = {
    id: 'gatehouse',
    name: 'Gatehouse',
    type: 'oidc',
    issuer: settings.issuer,
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    // The profile comes from userinfo, where Gatehouse puts email and the organization claims.
    idToken: false,
    checks: ['pkce', 'state'],
    // A refresh token (offline_access) is granted after the consent prompt.
    authorization: { params: { scope: 'openid email organization offline_access', prompt: 'consent' } },
    profile: (profile) => ({ id: profile.sub, email: profile.email }),
  };

  /** Renews an expired access token with the refresh token (which rotates: keep the new one). */
  async function refresh(refreshToken: string) {
    const discovery = await fetch(`${settings.issuer}/.well-known/openid-configuration`);
    const { token_endpoint } = (await discovery.json()) as { token_endpoint: string };
    const response = await fetch(token_endpoint, {
      method: 'POST',
      headers: { authorization: `Basic ${btoa(`${settings.clientId}:${settings.clientSecret}`)}` },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }),
    });
    if (!response.ok) throw new Error(`refresh failed: ${response.status}`);
    return (await response.json()) as { access_token: string; refresh_token: string; expires_in: number };
  }

  return {
    providers: [gatehouse],
    secret: settings.secret,
    basePath: '/auth',
    trustHost: true,
    callbacks: {
      async jwt({ token, account, profile }) {
        if (account && profile) {
          // Signing in: keep who they are, their organization and the tokens.
          return {
            ...token,
            sub: profile.sub ?? undefined,
            email: profile.email,
            org: profile.org as string | null,
            org_role: profile.org_role as string | null,
            access_token: account.access_token,
            refresh_token: account.refresh_token,
            expires_at: account.expires_at,
          };
        }
        if (!token.expires_at || Date.now() < token.expires_at * 1000 || !token.refresh_token) return token;
        try {
          const tokens = await refresh(token.refresh_token);
          return {
            ...token,
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: Math.floor(Date.now() / 1000) + tokens.expires_in,
          };
        } catch {
          return { ...token, error: 'RefreshTokenError' as const };
        }
      },
      session({ session, token }) {
        session.user.id = token.sub ?? '';
        session.org = token.org;
        session.org_role = token.org_role;
        session.error = token.error;
        return session;
      },
    },
  };
}

/** The app's `/auth/*` routes, for any server that speaks Web `Request` and `Response`. */
export const authHandler = (config: AuthConfig) => (request: Request) => Auth(request, config);
