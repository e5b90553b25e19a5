import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  type AuthRequirements,
  authenticate,
  checkGuardOptions,
  checkRequirements,
  type GatehouseAuth,
  type GuardOptions,
  headerValue,
} from './guard.ts';

export type { AuthRequirements, GatehouseAuth, GuardErrorBody, GuardOptions } from './guard.ts';

/** A hook of `requireAuth()`: put it in a route's `onRequest` (or `preHandler`), or add it with `addHook`. */
export type GatehouseAuthHook = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

declare module 'fastify' {
  interface FastifyRequest {
    /** The caller, set by `requireAuth()` of `@gatehouse/sdk/fastify`; null on routes it does not guard. */
    auth: GatehouseAuth | null;
  }
  interface FastifyInstance {
    /**
     * The hook that lets a request through only with a valid Gatehouse access token (`Authorization: Bearer …`)
     * and sets `request.auth`. `requirements` add to, or replace, those given to the plugin for this route.
     */
    requireAuth(requirements?: AuthRequirements): GatehouseAuthHook;
  }
}

async function plugin(fastify: FastifyInstance, options: GuardOptions): Promise<void> {
  checkGuardOptions(options);
  // Fastify passes the register options with its own keys (`prefix`, …): keep only what the guard reads.
  const { baseUrl, applicationId, issuer, audience, requireOrganization, roles, minimumAal } = options;
  const defaults: GuardOptions = { baseUrl, applicationId, issuer, audience, requireOrganization, roles, minimumAal };
  // A fixed shape for every request (Fastify's advice for decorations): null until a guard sets it.
  fastify.decorateRequest('auth', null);
  fastify.decorate('requireAuth', (requirements: AuthRequirements = {}): GatehouseAuthHook => {
    checkRequirements(requirements);
    const settled: GuardOptions = { ...defaults, ...requirements };
    return async (request, reply) => {
      const result = await authenticate(
        headerValue(request.headers.authorization),
        settled,
        headerValue(request.headers['x-request-id']),
      );
      if (result.refusal) {
        const { status, headers, body } = result.refusal;
        return reply.code(status).headers(headers).send(body);
      }
      request.auth = result.auth;
      return undefined;
    };
  });
}

/**
 * The Fastify (5) plugin: `await app.register(gatehouseAuth, { baseUrl, applicationId })` decorates every request
 * with `auth` and the instance with `requireAuth(requirements?)`, the hook a route puts in its `onRequest`:
 *
 * ```ts
 * await app.register(gatehouseAuth, { baseUrl: 'https://auth.example.com', applicationId: APP_ID });
 * app.get('/api/me', { onRequest: app.requireAuth() }, async (request) => ({ user: request.auth?.userId }));
 * app.delete('/api/projects/:id', { onRequest: app.requireAuth({ roles: ['owner', 'admin'] }) }, handler);
 * app.addHook('onRequest', app.requireAuth()); // or every route of this instance
 * ```
 *
 * Refusals: 401 (`WWW-Authenticate: Bearer …`) for a missing, malformed, expired or foreign token, 403 when the
 * token falls short of `requireOrganization`, `roles` or `minimumAal`, 503 when the signing keys cannot be fetched;
 * each in the service's JSON error envelope. Tokens are verified locally (`verifyToken`): a revoked session's token
 * passes until it expires. The plugin is not encapsulated (like one wrapped in fastify-plugin): registered once, its
 * decorations serve the instance and every child.
 */
export const gatehouseAuth: FastifyPluginAsync<GuardOptions> = Object.assign(plugin, {
  [Symbol.for('skip-override')]: true,
  [Symbol.for('fastify.display-name')]: '@gatehouse/sdk/fastify',
});
