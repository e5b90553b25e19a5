import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import {
  AppError,
  acceptSamlResponse,
  applicationOfVerifiedDomain,
  appRouter,
  CORS_ALLOWED_HEADERS,
  type Context,
  callProcedure,
  createContext,
  describeError,
  ERROR_CODES,
  type ErrorBody,
  errorBody,
  handleProviderRequest,
  isDatabaseUnreachable,
  loadOpenApiDocument,
  MAX_BODY_DEPTH,
  OUTAGE_RETRY_AFTER_S,
  preflightAllowed,
  procedureTypes,
  type RequestInfo,
  type RestRoute,
  relayRedirect,
  restRoutes,
  type Services,
  samlMetadata,
  tooDeep,
  withRequest,
} from '@gatehouse/api';
import { getErrorShape, getTRPCErrorFromUnknown } from '@trpc/server';
import { fastifyRequestHandler } from '@trpc/server/adapters/fastify';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { registerConsole } from './console/index.ts';
import { registerHostedPages } from './hosted/index.ts';
import { hostnameOf } from './hosted/request.ts';
import { registerLogo } from './logo.ts';
import { registerMetrics } from './metrics.ts';
import { registerPortal } from './portal/index.ts';
import { registerScim } from './scim.ts';

const ONE_MIB = 1024 * 1024;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export interface ServerOptions {
  /** Builds the services with the server's logger. */
  services: (log: Services['log']) => Services;
  /** A pino level, or false for no logs (tests). */
  logLevel: string | false;
  /** Where log lines go (default stdout); tests read them. */
  logStream?: { write(line: string): void };
  /** Reports readiness for /readyz (database reachable, migrations applied). */
  ready: () => Promise<boolean>;
  /** Whether the process is shutting down: /readyz answers 503 `draining`, and every answer closes its connection. */
  draining?: () => boolean;
  /** When set, `GET /metrics` needs it as a bearer token. */
  metricsToken?: string;
}

const meta = (request: FastifyRequest) => ({ timestamp: new Date().toISOString(), request_id: request.id });

function sendError(request: FastifyRequest, reply: FastifyReply, body: ErrorBody, headers: Record<string, string> = {}) {
  reply
    .code(ERROR_CODES[body.code].status)
    .headers(headers)
    .type('application/json')
    .send({ success: false, data: null, error: body, meta: meta(request) });
}

/** Every 500 is logged once, at error level, with the request id (pino's `reqId`) and what failed — never a message that could quote SQL or a secret. */
function logUnhandled(log: FastifyRequest['log'], error: unknown) {
  log.error({ err: describeError(error) }, 'unhandled error');
}

/**
 * Errors the procedure middleware never saw (tRPC failing before or after it): those that answer 500 are logged
 * here. The middleware's own answers carry an AppError cause and were logged there.
 */
function logOutsideProcedure(log: FastifyRequest['log'], error: unknown) {
  const cause = (error as { cause?: unknown }).cause;
  if (!(cause instanceof AppError) && errorBody(error).code === 'internal_error') logUnhandled(log, error);
}

/** Fastify's own errors (parsing, limits) in our vocabulary. */
function fastifyErrorBody(error: { code?: string; statusCode?: number }): ErrorBody | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'payload_too_large', message: 'The body is larger than 1 MiB' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'unsupported_media_type', message: 'Send the body as application/json' };
    default:
      return undefined;
  }
}

const requestInfo = (request: FastifyRequest): RequestInfo => ({
  requestId: request.id,
  headers: request.headers,
  ip: request.ip,
  log: request.log,
});

/** fastify's schema compilers, for a route that declares a schema: none does (see `buildServer`). */
const noRouteSchemas = () => () => {
  throw new Error('Route schemas are not used: zod validates the input of every procedure');
};

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export async function buildServer(options: ServerOptions): Promise<{ app: FastifyInstance; services: Services }> {
  const app = Fastify({
    bodyLimit: ONE_MIB,
    trustProxy: false,
    requestIdHeader: false,
    // No route declares a JSON schema (zod validates every input, in the procedures): fastify's own schema compilers
    // (ajv, fast-json-stringify) are never asked for, so they are not loaded at start either.
    schemaController: { compilersFactory: { buildValidator: noRouteSchemas, buildSerializer: noRouteSchemas } },
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    logger: options.logLevel
      ? {
          level: options.logLevel,
          ...(options.logStream ? { stream: options.logStream } : {}),
          // Paths only: query strings can carry one-time tokens. Headers (credentials) are never logged. The one token a
          // path carries (the hosted invitation page's, `inv_…`) is cut out.
          serializers: {
            req: (req) => ({ method: req.method, path: req.url.split('?')[0]?.replace(/inv_[A-Za-z0-9]+/g, 'inv_…') }),
            res: (res) => ({ status: res.statusCode }),
          },
        }
      : false,
  });
  const services = options.services(app.log as Services['log']);

  const draining = options.draining ?? (() => false);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // Shutting down: no connection is kept for a next request, which the balancer sends to another process.
    if (draining()) reply.header('connection', 'close');
  });
  registerOAuth2Provider(app, services);

  // JSON is the only body we accept; an empty body reads as no input.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: ONE_MIB }, (_req, body, done) => {
    const text = body as string;
    if (text.trim() === '') return done(null, undefined);
    try {
      const parsed = JSON.parse(text);
      // Deep nesting costs every later step (validation, storage, serialization) and PostgreSQL refuses jsonb past a
      // stack depth: refuse it here, before anything walks it.
      const deep = tooDeep(parsed, MAX_BODY_DEPTH);
      if (deep) {
        const path = `${deep.slice(0, 8).join('.')}${deep.length > 8 ? '…' : ''}`;
        return done(
          new AppError('validation_failed', 'The request does not match the schema', [
            { path, message: `nested deeper than ${MAX_BODY_DEPTH} levels` },
          ]),
          undefined,
        );
      }
      done(null, parsed);
    } catch {
      done(new AppError('invalid_json', 'The body is not valid JSON'), undefined);
    }
  });

  app.setErrorHandler((error, request, reply) => {
    if (error instanceof AppError) {
      return sendError(request, reply, { code: error.code, message: error.message, details: error.details }, error.headers);
    }
    const known = fastifyErrorBody(error as { code?: string });
    if (known) return sendError(request, reply, known);
    if ((error as { statusCode?: number }).statusCode === 400 && (error as { code?: string }).code?.startsWith('FST_ERR_CTP')) {
      return sendError(request, reply, { code: 'invalid_json', message: 'The body is not valid JSON' });
    }
    if (isDatabaseUnreachable(error)) {
      services.outage.report(error);
      return sendError(request, reply, errorBody(error), { 'retry-after': String(OUTAGE_RETRY_AFTER_S) });
    }
    logUnhandled(request.log, error);
    return sendError(request, reply, { code: 'internal_error', message: 'Internal error' });
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, { code: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}` }),
  );

  registerMetrics(
    app,
    services,
    (request) =>
      (request.routeOptions.config as { route?: string } | undefined)?.route ??
      (request.url.startsWith('/trpc/') ? '/trpc' : (request.routeOptions.url ?? 'unmatched')),
    options.metricsToken,
  );

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    if (draining()) return reply.code(503).send({ status: 'draining' });
    const ready = await options.ready().catch(() => false);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready' });
  });

  // Built on the first request for it (its generator loads then), then served from memory.
  let openApiDocument: ReturnType<typeof loadOpenApiDocument> | undefined;
  app.get('/v1/openapi.json', async () => {
    openApiDocument ??= loadOpenApiDocument(services.baseUrl);
    return openApiDocument;
  });
  registerDocs(app);

  await ioTurn();
  await registerTrpc(app, services);
  await ioTurn();

  registerCors(app, services);
  // The links of magic-link mails sent before the hosted pages took them over (`/sign-in/verify?application_id=&token=`)
  // open the application's own page (`/a/{id}/magic-link`, the same confirmation): built from configuration only
  // (SECURITY 10), the token passed on untouched, never cached, and no referrer (the URL carries a token).
  app.get('/sign-in/verify', async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const applicationId = typeof query.application_id === 'string' ? query.application_id.toLowerCase() : '';
    const token = typeof query.token === 'string' ? query.token : '';
    reply.header('cache-control', 'no-store').header('referrer-policy', 'no-referrer');
    if (!UUID.test(applicationId) || !token) {
      return reply.code(404).type('text/plain; charset=utf-8').send('This sign-in link is not valid.');
    }
    const target = new URL(`${services.baseUrl}/a/${applicationId}/magic-link`);
    target.searchParams.set('token', token);
    return reply.redirect(target.toString(), 302);
  });

  await registerHostedPages(app, services);
  await ioTurn();
  await registerPortal(app, services);
  await ioTurn();
  await registerConsole(app, services);
  await ioTurn();
  await registerSaml(app, services);
  registerLogo(app, services);
  await ioTurn();
  await registerScim(app, services);
  await registerOAuthRedirect(app, services);
  await ioTurn();
  registerRest(app, services, restRoutes());
  return { app, services };
}

/**
 * A turn of the event loop (its I/O phase) between two steps of the build, which otherwise runs without one: the
 * start's database round trips, begun before the build (index.ts: the connection opened, the migrations checked, the
 * console application synced, in turn), advance at each, so they are done when the build is, rather than started then.
 */
const ioTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * `/trpc/<path>`. A single call as the SDK's `httpLink` sends it (a query as GET with `?input=<json>`, a mutation as
 * POST with the JSON input as its body) runs the procedure directly and is answered in tRPC's wire format
 * (`{result: {data}}`, or `{error: <shape>}` with the error's HTTP status). Anything else (batches, streams, method
 * overrides, unknown paths, a procedure of the other kind, input that is not JSON) goes to tRPC's own handler, which
 * answers as tRPC does. The same procedures and context as REST: the transports cannot differ in what they check.
 */
async function registerTrpc(app: FastifyInstance, services: Services) {
  const trpcOptions = {
    router: appRouter,
    createContext: ({ req }: { req: FastifyRequest }) => createContext(services, requestInfo(req)),
    // CORS headers of end-user procedures (set by the origin check) reach tRPC callers too.
    responseMeta: ({ ctx }: { ctx?: Context }) => ({ headers: ctx?.response.headers }),
    onError: ({ error, req }: { error: unknown; req: FastifyRequest }) => logOutsideProcedure(req.log, error),
  };
  /** The input of a single call, or `fallback` when tRPC's own handler must answer. */
  const fallback = Symbol('fallback');
  const singleCallInput = (request: FastifyRequest, type: string | undefined): unknown => {
    const query = request.query as Record<string, unknown>;
    if (!type || 'batch' in query || request.headers['trpc-accept'] || request.headers.accept === 'application/jsonl') {
      return fallback;
    }
    try {
      if (type === 'query' && request.method === 'GET') {
        return typeof query.input === 'string' ? JSON.parse(query.input) : query.input === undefined ? undefined : fallback;
      }
      if (type === 'mutation' && request.method === 'POST') {
        const body = request.body;
        if (body === undefined) return undefined;
        return typeof body === 'string' && request.headers['content-type']?.startsWith('application/json')
          ? JSON.parse(body)
          : fallback;
      }
    } catch {
      // Not JSON: tRPC answers its PARSE_ERROR.
    }
    return fallback;
  };
  await app.register(async (scope) => {
    // tRPC reads its bodies itself (its own handler parses them; the fast path with JSON.parse).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      ['application/json', 'multipart/form-data'],
      { parseAs: 'string', bodyLimit: ONE_MIB },
      (_req, body, done) => done(null, body),
    );
    scope.all<{ Params: { path: string } }>('/trpc/:path', async (request, reply) => {
      const path = request.params.path;
      const type = procedureTypes.get(path);
      const input = singleCallInput(request, type);
      if (input === fallback) return fastifyRequestHandler({ ...trpcOptions, req: request, res: reply, path });
      const ctx = createContext(services, requestInfo(request));
      reply.header('vary', 'trpc-accept, accept').type('application/json');
      try {
        const data = await callProcedure(ctx, path, type!, input);
        return reply.headers(ctx.response.headers).send(JSON.stringify({ result: { data } }));
      } catch (cause) {
        const error = getTRPCErrorFromUnknown(cause);
        logOutsideProcedure(request.log, error);
        const shape = getErrorShape({ config: appRouter._def._config, ctx, error, input, path, type: type as 'query' });
        return reply
          .code(getHTTPStatusCodeFromError(error))
          .headers(ctx.response.headers)
          .send(JSON.stringify({ error: shape }));
      }
    });
  });
}

/**
 * The REST surface (CONTRACT §1): one fastify route per procedure with OpenAPI meta. Its input is the JSON body (POST,
 * PATCH, PUT) or the query (GET, DELETE), with the path parameters over it; the procedure's answer goes in the
 * envelope with the success status it declares, its errors in the error envelope.
 */
function registerRest(app: FastifyInstance, services: Services, routes: RestRoute[]) {
  for (const route of routes) {
    app.route({
      method: route.method,
      url: route.path.replace(/\{(\w+)\}/g, ':$1'),
      config: { route: route.path },
      handler: async (request, reply) => {
        const source = (route.body ? request.body : request.query) ?? {};
        if (typeof source !== 'object' || Array.isArray(source)) {
          return sendError(request, reply, {
            code: 'validation_failed',
            message: 'The request does not match the schema',
            details: [{ path: '(root)', message: 'the body must be a JSON object' }],
          });
        }
        // A path parameter repeated in the body or query would be silently dropped (the path wins): refuse it, so
        // that nobody believes they set an `id` (SECURITY 11, mass assignment).
        const shadowed = route.parameters.filter((name) => name in source);
        if (shadowed.length) {
          return sendError(request, reply, {
            code: 'validation_failed',
            message: 'The request does not match the schema',
            details: shadowed.map((name) => ({
              path: name,
              message: 'is a path parameter; it cannot be sent in the body or query',
            })),
          });
        }
        const input: Record<string, unknown> = { ...source, ...(request.params as Record<string, string>) };
        if (!route.body) {
          // An empty query value (`?domain=`) is an absent one, as HTML forms send them.
          for (const [key, value] of Object.entries(source)) if (value === '') delete input[key];
        }
        const ctx = createContext(services, requestInfo(request));
        let data: unknown;
        try {
          data = await route.call(ctx, input);
        } catch (error) {
          logOutsideProcedure(request.log, error);
          return sendError(request, reply, errorBody(error), ctx.response.headers);
        }
        if (ctx.response.stream) return sendStream(request, reply, ctx.response.headers, ctx.response.stream);
        reply
          .code(ctx.response.status ?? 200)
          .headers(ctx.response.headers)
          .type('application/json');
        if (ctx.response.raw) return reply.send(JSON.stringify(data));
        // An idempotent replay repeats the first answer's meta, so the whole body is the same, byte for byte.
        return reply.send(
          `{"success":true,"data":${JSON.stringify(data) ?? 'null'},"error":null,"meta":${JSON.stringify(ctx.response.meta ?? meta(request))}}`,
        );
      },
    });
  }
}

/**
 * A streamed answer (a procedure with meta `stream`): chunked, not enveloped, each chunk produced as the client reads
 * (a Readable over the procedure's chunks keeps to the socket's pace). A failure after the first byte cannot become an
 * error envelope: it is logged and the connection is cut, so the client sees a truncated body, never a complete-looking one.
 */
function sendStream(
  request: FastifyRequest,
  reply: FastifyReply,
  headers: Record<string, string>,
  stream: NonNullable<Context['response']['stream']>,
) {
  const body = Readable.from(stream.body, { objectMode: false });
  body.on('error', (error) => logOutsideProcedure(request.log, error));
  reply.code(200).headers(headers).type(stream.contentType).header('cache-control', 'no-store');
  if (stream.filename) reply.header('content-disposition', `attachment; filename="${stream.filename}"`);
  return reply.send(body);
}

/**
 * The two SAML routes that are not JSON (CONTRACT §1: not enveloped): the IdP's form post to the ACS, answered with a
 * redirect to the app, and our SP metadata XML. Their own scope accepts the form encoding; nothing else does.
 */
async function registerSaml(app: FastifyInstance, services: Services) {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: ONE_MIB },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    scope.post<{ Params: { connection_id: string }; Body: Record<string, unknown> | undefined }>(
      '/v1/saml/acs/:connection_id',
      async (request, reply) => {
        const ctx = createContext(services, requestInfo(request));
        // The acting scope of the audit log (no caller: the user the assertion signs in acted).
        const outcome = await services.inFlight.run(() =>
          withRequest({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null }, () =>
            acceptSamlResponse(ctx, request.params.connection_id, request.body ?? {}),
          ),
        );
        // 303: the browser follows with a GET, so the form (the assertion) is not posted again.
        return reply.code(303).header('location', outcome.location).header('cache-control', 'no-store').send();
      },
    );
    scope.get<{ Params: { connection_id: string } }>('/v1/saml/metadata/:connection_id', async (request, reply) => {
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(request.params.connection_id)) {
        return sendError(request, reply, { code: 'not_found', message: 'SAML connection not found' });
      }
      const xml = await samlMetadata(createContext(services, requestInfo(request)), request.params.connection_id);
      return reply.type('application/samlmetadata+xml; charset=utf-8').header('cache-control', 'public, max-age=300').send(xml);
    });
  });
}

const PROVIDER_PATH = /^\/oauth2\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\/[^?]*)?(\?.*)?$/i;
/** RFC 8414 §3: the metadata of issuer `{base}/oauth2/{id}` is also at `/.well-known/oauth-authorization-server/oauth2/{id}`. */
const METADATA_PATH =
  /^\/\.well-known\/oauth-authorization-server\/oauth2\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(\?.*)?$/i;

/**
 * The provider's routes at the root of an issuer that is a custom domain (`https://login.acme.com`): discovery (and
 * its RFC 8414 name), `auth`, `token`, userinfo (`me`), `jwks`, logout (`session/end`), registration (`reg`). None is
 * a hosted page's (those are `sign-in`, `account`, …).
 */
const DOMAIN_PROVIDER_PATH =
  /^(\/\.well-known\/(?:openid-configuration|oauth-authorization-server)|\/(?:auth|token|me|jwks|session\/end|reg)(?:\/[^?]*)?)(\?.*)?$/;

/** Which provider a request is for: the application, the path after its issuer, and the custom domain it came to. */
async function providerRequest(services: Services, request: FastifyRequest) {
  const url = request.raw.url ?? '';
  const metadata = METADATA_PATH.exec(url);
  const match = metadata ? undefined : PROVIDER_PATH.exec(url);
  if (metadata || match) {
    const applicationId = (metadata ?? match)![1]!.toLowerCase();
    const path = metadata ? `/.well-known/openid-configuration${metadata[2] ?? ''}` : `${match![2] ?? '/'}${match![3] ?? ''}`;
    return { applicationId, path, domain: undefined };
  }
  // At the root of an application's verified custom domain: its issuer there.
  const root = DOMAIN_PROVIDER_PATH.exec(url);
  const domain = root ? hostnameOf(services, request.headers.host) : undefined;
  const applicationId = domain ? await applicationOfVerifiedDomain(services.orm.em.fork(), domain) : undefined;
  if (!root || !domain || !applicationId) return undefined;
  const path = root[1]!.startsWith('/.well-known/') ? '/.well-known/openid-configuration' : root[1]!;
  return { applicationId, path: `${path}${root[2] ?? ''}`, domain };
}

/**
 * Each application's OAuth 2.1 / OpenID Connect provider (oidc-provider, a Koa app) under its issuer path
 * `/oauth2/{application_id}`, and at the root of each of its verified custom domains (issuer `https://{domain}`). A
 * hook, before fastify reads the body: the provider parses its own form posts. Its answers are OAuth's own (RFC 6749
 * errors, discovery JSON), not the envelope.
 */
function registerOAuth2Provider(app: FastifyInstance, services: Services) {
  app.addHook('onRequest', async (request, reply) => {
    const target = await providerRequest(services, request);
    if (!target) return;
    const { applicationId, path, domain } = target;
    reply.hijack();
    try {
      const handled = await services.inFlight.run(() =>
        withRequest({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null }, () =>
          handleProviderRequest(services, applicationId, path, request.raw, reply.raw, domain),
        ),
      );
      if (!handled) {
        reply.raw.writeHead(404, { 'content-type': 'application/json', 'x-request-id': request.id });
        reply.raw.end(
          JSON.stringify({
            success: false,
            data: null,
            error: { code: 'not_found', message: 'Application not found' },
            meta: meta(request),
          }),
        );
      }
    } catch (error) {
      const unreachable = isDatabaseUnreachable(error);
      if (unreachable) services.outage.report(error);
      else logUnhandled(request.log, error);
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(unreachable ? 503 : 500, {
          'content-type': 'application/json',
          ...(unreachable ? { 'retry-after': String(OUTAGE_RETRY_AFTER_S) } : {}),
        });
      }
      reply.raw.end(
        JSON.stringify({
          success: false,
          data: null,
          error: unreachable ? errorBody(error) : { code: 'internal_error', message: 'Internal error' },
          meta: meta(request),
        }),
      );
    }
  });
}

/**
 * The redirect URI every OAuth client registers (`{GATEHOUSE_BASE_URL}/v1/auth/oauth/redirect`): the provider sends
 * the browser here (a GET, or Apple's form post), and it goes on to the app's `redirect_uri` with `code` and `state`.
 */
async function registerOAuthRedirect(app: FastifyInstance, services: Services) {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      'application/x-www-form-urlencoded',
      { parseAs: 'string', bodyLimit: 64 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    const relay = async (request: FastifyRequest, reply: FastifyReply, params: Record<string, unknown>) => {
      const outcome = await relayRedirect(createContext(services, requestInfo(request)), params);
      // 303: a posted form is not posted again; no-referrer: the code does not leak to the app's third parties.
      return reply
        .code(303)
        .header('location', outcome.location)
        .header('cache-control', 'no-store')
        .header('referrer-policy', 'no-referrer')
        .send();
    };
    scope.get<{ Querystring: Record<string, unknown> }>('/v1/auth/oauth/redirect', (request, reply) =>
      relay(request, reply, request.query ?? {}),
    );
    scope.post<{ Body: Record<string, unknown> | undefined }>('/v1/auth/oauth/redirect', (request, reply) =>
      relay(request, reply, request.body ?? {}),
    );
  });
}

/**
 * Preflights of end-user routes (CONTRACT §2): an `OPTIONS` carries no application id, so the origin is allowed when
 * any application lists it; the actual request is then checked against its own application. Management routes get
 * no CORS headers at all: a secret key never belongs in a browser.
 */
function registerCors(app: FastifyInstance, services: Services) {
  const endUserPath = (url: string) =>
    url.startsWith('/v1/auth/') || url.startsWith('/v1/oauth2/interactions/') || url.startsWith('/trpc/auth.');
  const jwksPath = (url: string) => /^\/v1\/(\.well-known|applications\/[^/]+)\/jwks\.json(\?|$)/.test(url);
  // A hook, not a route: tRPC's adapter registers `all /trpc/:path`, which would otherwise take the OPTIONS.
  app.addHook('onRequest', async (request, reply) => {
    if (request.method !== 'OPTIONS') return;
    const origin = request.headers.origin;
    // Public keys are for everyone, including browsers that send x-application-id.
    if (jwksPath(request.url)) {
      return reply
        .code(204)
        .headers({
          'access-control-allow-origin': '*',
          'access-control-allow-methods': 'GET',
          'access-control-allow-headers': 'x-application-id',
          'access-control-max-age': '600',
        })
        .send();
    }
    if (!endUserPath(request.url) || typeof origin !== 'string') {
      return sendError(request, reply, { code: 'not_found', message: `No route OPTIONS ${request.url.split('?')[0]}` });
    }
    if (!(await preflightAllowed(services.orm.em.fork() as never, services, origin))) {
      return sendError(request, reply, { code: 'origin_not_allowed', message: 'This origin is not allowed' });
    }
    return reply
      .code(204)
      .headers({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'GET, POST, PATCH, PUT, DELETE',
        'access-control-allow-headers': CORS_ALLOWED_HEADERS,
        'access-control-max-age': '600',
        vary: 'Origin',
      })
      .send();
  });
}

const require = createRequire(import.meta.url);

/** `/docs`: Swagger UI served from the installed package, so the reference works offline. */
function registerDocs(app: FastifyInstance) {
  // The package's directory, found without loading its entry point: that evaluates the 1.5 MB browser bundle (half a
  // second of CPU at every start) only to answer this path.
  const dir = dirname(require.resolve('swagger-ui-dist/package.json'));
  const assets: Record<string, string> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'application/javascript' };
  // Read when first asked for (2 MB a process would otherwise hold from its start), then kept.
  const files = new Map<string, Promise<Buffer>>();
  app.get('/docs', async (_request, reply) => reply.type('text/html').send(DOCS_HTML));
  app.get<{ Params: { file: string } }>('/docs/:file', async (request, reply) => {
    const name = request.params.file;
    const type = Object.hasOwn(assets, name) ? assets[name] : undefined;
    if (!type) return sendError(request, reply, { code: 'not_found', message: 'No such asset' });
    let file = files.get(name);
    if (!file) {
      file = readFile(join(dir, name));
      files.set(name, file);
    }
    return reply
      .type(type)
      .header('cache-control', 'public, max-age=86400')
      .send(await file);
  });
}

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Gatehouse API reference</title>
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="reference"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script>
    window.ui = SwaggerUIBundle({ url: '/v1/openapi.json', dom_id: '#reference', deepLinking: true });
  </script>
</body>
</html>`;
