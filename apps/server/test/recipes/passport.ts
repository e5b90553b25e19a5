import { createHash, randomBytes } from 'node:crypto';
import express, { type Request } from 'express';
import session from 'express-session';
import type { oauth2tokenCallback } from 'oauth';
import passport from 'passport';
import { type AuthenticateOptions, Strategy } from 'passport-openidconnect';

export interface GatehouseSettings {
  /** `{GATEHOUSE_BASE_URL}/oauth2/{application_id}` */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Where this app is served; `${appUrl}/callback` is the client's redirect URI. */
  appUrl: string;
  /** Signs the session cookie. */
  sessionSecret: string;
}

declare global {
  namespace Express {
    interface User {
      sub: string;
      email?: string;
      org: string | null;
      org_role: string | null;
      refreshToken: string;
      expiresAt: number;
    }
  }
}

declare module 'express-session' {
  interface SessionData {
    pkceVerifier?: string;
  }
}

interface RefreshedTokens {
  access_token: string;
  refresh_token: string;
  expires_in: number;
}

/**
 * passport-openidconnect with PKCE, which Gatehouse requires of every client and the strategy does not send by itself
 * (jaredhanson/passport-openidconnect#56): the verifier is kept in the session, its challenge goes with the
 * authorization request and the verifier with the code. Also: the refresh grant, with the strategy's own OAuth client.
 */
class GatehouseStrategy extends Strategy {
  override authenticate(req: Request, options: AuthenticateOptions & { codeChallenge?: string } = {}) {
    if (typeof req.query.code === 'string') {
      const verifier = req.session.pkceVerifier;
      delete req.session.pkceVerifier;
      // Passport runs a copy of the strategy per request: this request's token exchange sends its verifier.
      const oauth2 = this._oauth2;
      this._oauth2 = Object.create(oauth2, {
        getOAuthAccessToken: {
          value: (code: string, params: object, callback: oauth2tokenCallback) =>
            oauth2.getOAuthAccessToken(code, { ...params, code_verifier: verifier }, callback),
        },
      });
    } else if (!req.query.error) {
      const verifier = randomBytes(32).toString('base64url');
      req.session.pkceVerifier = verifier;
      options = { ...options, codeChallenge: createHash('sha256').update(verifier).digest('base64url') };
    }
    return super.authenticate(req, options);
  }

  override authorizationParams(options: { codeChallenge?: string }) {
    return { code_challenge: options.codeChallenge, code_challenge_method: 'S256' };
  }

  /** Renews an expired access token with the refresh token (which rotates: keep the new one). */
  refresh(refreshToken: string): Promise<RefreshedTokens> {
    return new Promise((resolve, reject) =>
      this._oauth2.getOAuthAccessToken(
        refreshToken,
        { grant_type: 'refresh_token' },
        (error, access_token, refresh_token, results) => {
          if (error || !access_token || !refresh_token) return reject(new Error('refresh failed'));
          resolve({ access_token, refresh_token, expires_in: results.expires_in });
        },
      ),
    );
  }
}

export async function createApp(settings: GatehouseSettings) {
  // The endpoints, from the issuer's discovery document.
  const discovery = await fetch(`${settings.issuer}/.well-known/openid-configuration`);
  const metadata = (await discovery.json()) as Record<string, string>;

  const strategy = new GatehouseStrategy(
    {
      issuer: metadata.issuer!,
      authorizationURL: metadata.authorization_endpoint!,
      tokenURL: metadata.token_endpoint!,
      userInfoURL: metadata.userinfo_endpoint!,
      clientID: settings.clientId,
      clientSecret: settings.clientSecret,
      callbackURL: `${settings.appUrl}/callback`,
      scope: ['email', 'organization', 'offline_access'],
      // A refresh token (offline_access) is granted after the consent prompt.
      prompt: 'consent',
    },
    // With nine parameters the strategy reads userinfo (email and the organization claims are there) and hands it over.
    (
      _issuer: string,
      userinfo: object,
      _idProfile: object,
      _context: object,
      _idToken: string | object,
      _accessToken: string | object,
      refreshToken: string,
      params: { expires_in: number },
      done: (error: Error | null, user?: Express.User) => void,
    ) => {
      const claims = (userinfo as { _json: { sub: string; email?: string; org?: string | null; org_role?: string | null } })
        ._json;
      done(null, {
        sub: claims.sub,
        email: claims.email,
        org: claims.org ?? null,
        org_role: claims.org_role ?? null,
        refreshToken,
        expiresAt: Date.now() + params.expires_in * 1000,
      });
    },
  );
  passport.use('gatehouse', strategy);
  passport.serializeUser((user, done) => done(null, user));
  passport.deserializeUser((user: Express.User, done) => done(null, user));

  const app = express();
  app.use(session({ secret: settings.sessionSecret, resave: false, saveUninitialized: false }));
  app.use(passport.initialize());
  app.use(passport.session());

  app.get('/login', passport.authenticate('gatehouse'));
  app.get('/callback', passport.authenticate('gatehouse', { successRedirect: '/me', failureRedirect: '/login' }));
  app.get('/me', async (req, res) => {
    let user = req.user;
    if (!user) return void res.status(401).send('Not signed in: /login');
    if (Date.now() >= user.expiresAt) {
      const tokens = await strategy.refresh(user.refreshToken);
      user = { ...user, refreshToken: tokens.refresh_token, expiresAt: Date.now() + tokens.expires_in * 1000 };
      const renewed = user;
      await new Promise<void>((resolve, reject) => req.login(renewed, (error) => (error ? reject(error) : resolve())));
    }
    const { sub, email, org, org_role, expiresAt } = user;
    res.json({ user: { sub, email, org, org_role }, expires_at: new Date(expiresAt).toISOString() });
  });
  return app;
}
