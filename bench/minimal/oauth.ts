/**
 * The baseline of the oauth suite: the least a server can do for an OpenID Connect callback — redeem the code with its
 * PKCE verifier and verify the ID token (openid-client: signature against the issuer's JWKS, iss, aud, exp, nonce),
 * nothing else (no database, no user, no session). `node bench/minimal/oauth.ts`, configured by the environment: PORT,
 * HOST, MINIMAL_ISSUER, MINIMAL_CLIENT_ID, MINIMAL_CLIENT_SECRET, MINIMAL_REDIRECT_URI. `POST /start` answers an
 * authorization URL (its state, verifier and nonce kept in memory); `POST /callback {code, state}` answers the `sub`.
 */
import Fastify from 'fastify';
import * as oidc from 'openid-client';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const redirectUri = env('MINIMAL_REDIRECT_URI');
let configuration: Promise<oidc.Configuration> | undefined;
const discovered = () =>
  (configuration ??= oidc.discovery(
    new URL(env('MINIMAL_ISSUER')),
    env('MINIMAL_CLIENT_ID'),
    undefined,
    oidc.ClientSecretBasic(env('MINIMAL_CLIENT_SECRET')),
    { execute: [oidc.allowInsecureRequests] },
  ));
const pending = new Map<string, { verifier: string; nonce: string }>();
const app = Fastify();

app.get('/readyz', async () => ({ ok: true }));

app.post('/start', async () => {
  const config = await discovered();
  const state = oidc.randomState();
  const verifier = oidc.randomPKCECodeVerifier();
  const nonce = oidc.randomNonce();
  pending.set(state, { verifier, nonce });
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'openid email profile',
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { data: { authorization_url: url.toString() } };
});

app.post<{ Body: { code?: string; state?: string } }>('/callback', async (request, reply) => {
  const { code, state } = request.body ?? {};
  const checks = state ? pending.get(state) : undefined;
  if (!code || !state || !checks) return reply.code(401).send({ error: 'invalid_state' });
  pending.delete(state);
  const config = await discovered();
  const current = new URL(redirectUri);
  current.searchParams.set('code', code);
  current.searchParams.set('state', state);
  current.searchParams.set('iss', config.serverMetadata().issuer);
  const tokens = await oidc.authorizationCodeGrant(config, current, {
    pkceCodeVerifier: checks.verifier,
    expectedState: state,
    expectedNonce: checks.nonce,
    idTokenExpected: true,
  });
  return { data: { sub: tokens.claims()!.sub } };
});

await app.listen({ port: Number(env('PORT')), host: env('HOST') });
