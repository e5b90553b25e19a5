/**
 * The baseline of the hosted suite's code flow: a bare oidc-provider (the library Gatehouse's provider is built on) with
 * its in-memory adapter and nothing around it — one confidential client, PKCE (S256) required, EdDSA ID tokens, an
 * account that is its id, the same token lifetimes as Gatehouse's. `node bench/minimal/oidc-provider.ts`, configured by
 * the environment: PORT, HOST, MINIMAL_CLIENT_ID, MINIMAL_CLIENT_SECRET, MINIMAL_REDIRECT_URI.
 *
 * The in-memory adapter is a Map per model (the library's own development adapter is an LRU of 1 000 entries: under
 * load the codes and tokens evict the sessions and grants, and returning people would be asked to sign in again).
 *
 * Its login and consent are one route of its own, `GET /interaction/{uid}?`: the account is the authorization
 * request's `login_hint`, the grant is every scope asked for — what a person signing in once does, with no page. The
 * benchmark signs each user in once that way; afterwards a browser with the provider's session cookie gets a code with
 * no interaction, as it does from Gatehouse.
 */
import { generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import Provider, { type Adapter, type AdapterPayload, type Configuration } from 'oidc-provider';

const env = (name: string) => process.env[name] ?? `${name} missing`;
const port = Number(env('PORT'));
const issuer = `http://${env('HOST')}:${port}`;
const jwk = {
  // An Ed25519 key's JWK members are strings (node types an exported JWK loosely).
  ...(generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }) as Record<string, string>),
  kid: 'minimal',
  alg: 'EdDSA',
  use: 'sig',
};

/** oidc-provider's adapter over one Map per model: entries expire as the provider asks; consumption marks them. */
const stores = new Map<string, Map<string, { payload: AdapterPayload; expiresAt: number }>>();
class MemoryAdapter implements Adapter {
  private readonly store: Map<string, { payload: AdapterPayload; expiresAt: number }>;
  constructor(model: string) {
    this.store = stores.get(model) ?? new Map();
    stores.set(model, this.store);
  }
  async upsert(id: string, payload: AdapterPayload, expiresIn: number) {
    this.store.set(id, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Number.POSITIVE_INFINITY });
  }
  async find(id: string) {
    const entry = this.store.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt > Date.now()) return entry.payload;
    this.store.delete(id);
    return undefined;
  }
  async findByUid(uid: string) {
    for (const [id, entry] of this.store) if (entry.payload.uid === uid) return this.find(id);
    return undefined;
  }
  async findByUserCode() {
    return undefined;
  }
  async consume(id: string) {
    const entry = this.store.get(id);
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }
  async destroy(id: string) {
    this.store.delete(id);
  }
  async revokeByGrantId(grantId: string) {
    for (const [id, entry] of this.store) if (entry.payload.grantId === grantId) this.store.delete(id);
  }
}
// Expired entries go every 10 s (codes live 60 s): memory stays bounded under load.
setInterval(() => {
  const now = Date.now();
  for (const store of stores.values()) for (const [id, entry] of store) if (entry.expiresAt <= now) store.delete(id);
}, 10_000).unref();

const configuration: Configuration = {
  adapter: MemoryAdapter,
  clients: [
    {
      client_id: env('MINIMAL_CLIENT_ID'),
      client_secret: env('MINIMAL_CLIENT_SECRET'),
      redirect_uris: [env('MINIMAL_REDIRECT_URI')],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
      id_token_signed_response_alg: 'EdDSA',
    },
  ],
  // oidc-provider's JWK type is a union keyed by kty that the spread cannot match; it is an OKP Ed25519 JWK.
  jwks: { keys: [jwk as never] },
  scopes: ['openid', 'email', 'offline_access'],
  claims: { openid: ['sub', 'acr', 'amr', 'auth_time'], email: ['email', 'email_verified'] },
  findAccount: (_ctx, id) => ({
    accountId: id,
    claims: () => ({ sub: id, email: `${id}@bench.example.com`, email_verified: true }),
  }),
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: false } },
  enabledJWA: { idTokenSigningAlgValues: ['EdDSA'] },
  cookies: { keys: ['minimal-cookie-key'] },
  ttl: { AuthorizationCode: 60, AccessToken: 600, IdToken: 600, Interaction: 600, Session: 14 * 86_400, Grant: 365 * 86_400 },
};

const provider = new Provider(issuer, configuration);
const handle = provider.callback();

createServer(async (req, res) => {
  if (req.url === '/readyz') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    return;
  }
  if (req.url?.startsWith('/interaction/')) {
    try {
      const details = await provider.interactionDetails(req, res);
      const accountId = String(details.params.login_hint ?? 'anyone');
      const grant = new provider.Grant({ accountId, clientId: String(details.params.client_id) });
      grant.addOIDCScope(String(details.params.scope));
      const grantId = await grant.save();
      await provider.interactionFinished(req, res, { login: { accountId }, consent: { grantId } });
    } catch (error) {
      res.writeHead(400).end(String(error));
    }
    return;
  }
  handle(req, res);
}).listen(port, env('HOST'));
