import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import helmet from '@fastify/helmet';
import {
  AppError,
  acceptSamlResponse,
  appRouter,
  buildOpenApiDocument,
  CORS_ALLOWED_HEADERS,
  type Context,
  createContext,
  describeError,
  ERROR_CODES,
  type ErrorBody,
  errorBody,
  handleProviderRequest,
  MAX_BODY_DEPTH,
  type Meta,
  preflightAllowed,
  type RequestInfo,
  relayRedirect,
  type Services,
  samlMetadata,
  tooDeep,
} from '@gatehouse/api';
import { fastifyTRPCPlugin } from '@trpc/server/adapters/fastify';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import { hostedInteractionHtml, hostedVerifyHtml } from './hosted-pages.ts';
import { registerMetrics } from './metrics.ts';

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

/** The context each request's procedure ran with, so the REST wrapper can read what the procedure declared. */
const contexts = new WeakMap<object, Context>();

const requestInfo = (request: FastifyRequest): RequestInfo => ({
  requestId: request.id,
  headers: request.headers,
  ip: request.ip,
  log: request.log,
});

export async function buildServer(options: ServerOptions): Promise<{ app: FastifyInstance; services: Services }> {
  const app = Fastify({
    bodyLimit: ONE_MIB,
    trustProxy: false,
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    },
    logger: options.logLevel
      ? {
          level: options.logLevel,
          ...(options.logStream ? { stream: options.logStream } : {}),
          // Paths only: query strings can carry one-time tokens. Headers (credentials) are never logged.
          serializers: {
            req: (req) => ({ method: req.method, path: req.url.split('?')[0] }),
            res: (res) => ({ status: res.statusCode }),
          },
        }
      : false,
  });
  const services = options.services(app.log as Services['log']);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
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
    logUnhandled(request.log, error);
    return sendError(request, reply, { code: 'internal_error', message: 'Internal error' });
  });

  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, { code: 'not_found', message: `No route ${request.method} ${request.url.split('?')[0]}` }),
  );

  const routes = restRoutes();
  registerMetrics(
    app,
    services,
    (request) =>
      request.url.startsWith('/v1/') && request.routeOptions.url === '/v1/*'
        ? (routeOf(routes, request)?.path ?? 'unmatched')
        : request.url.startsWith('/trpc/')
          ? '/trpc'
          : (request.routeOptions.url ?? 'unmatched'),
    options.metricsToken,
  );

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ready = await options.ready().catch(() => false);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready' });
  });

  const openApiDocument = buildOpenApiDocument(services.baseUrl);
  app.get('/v1/openapi.json', async () => openApiDocument);
  await registerDocs(app);

  await app.register(fastifyTRPCPlugin, {
    prefix: '/trpc',
    trpcOptions: {
      router: appRouter,
      createContext: ({ req }: { req: FastifyRequest }) => createContext(services, requestInfo(req)),
      // CORS headers of end-user procedures (set by the origin check) reach tRPC callers too.
      responseMeta: ({ ctx }: { ctx?: Context }) => ({ headers: ctx?.response.headers }),
      onError: ({ error, req }: { error: unknown; req: FastifyRequest }) => logOutsideProcedure(req.log, error),
    },
  });

  registerCors(app, services);
  // Security headers for the hosted pages only (the API answers JSON; /docs brings its own scripts): a CSP with
  // per-response nonces for the inline script and style, no framing, no referrer (the URL carries a token). Helmet
  // lives in a plugin scope of its own, so its per-request nonces are made for these pages and no API request.
  await app.register(async (pages) => {
    await pages.register(helmet, {
      enableCSPNonces: true,
      contentSecurityPolicy: {
        useDefaults: false,
        directives: {
          defaultSrc: ["'none'"],
          connectSrc: ["'self'"],
          formAction: ["'none'"],
          baseUri: ["'none'"],
          frameAncestors: ["'none'"],
        },
      },
      referrerPolicy: { policy: 'no-referrer' },
    });
    pages.get('/sign-in/verify', async (_request, reply) =>
      reply.type('text/html').header('cache-control', 'no-store').send(hostedVerifyHtml(reply.cspNonce)),
    );
    pages.get('/oauth2/:applicationId/interaction/:uid', async (_request, reply) =>
      reply.type('text/html').header('cache-control', 'no-store').send(hostedInteractionHtml(reply.cspNonce)),
    );
  });

  await registerSaml(app, services);
  await registerOAuthRedirect(app, services);
  registerRest(app, services);
  return { app, services };
}

/**
 * The REST surface: trpc-to-openapi runs the procedure that matches the method and path; this wrapper puts its
 * answer in the envelope (CONTRACT §1) and applies the success status the procedure declares.
 */
function registerRest(app: FastifyInstance, services: Services) {
  const pathParameters = restRoutes();
  const handle = createOpenApiNodeHttpHandler({
    router: appRouter,
    createContext: ({ req }) => {
      const ctx = createContext(services, requestInfo(req as unknown as FastifyRequest));
      contexts.set(req, ctx);
      return ctx;
    },
    responseMeta: ({ ctx }) => ({ status: ctx?.response.status, headers: ctx?.response.headers }),
    onError: ({ error, req }) => logOutsideProcedure((req as unknown as FastifyRequest).log, error),
    maxBodySize: ONE_MIB,
  });

  app.route({
    method: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
    url: '/v1/*',
    handler: async (request, reply) => {
      // A POST without a body (an action such as merge's siblings) is an empty JSON object, not a 415.
      if (request.body === undefined && request.method !== 'GET' && request.method !== 'DELETE') {
        request.body = {};
        request.headers['content-type'] ??= 'application/json';
      }
      // A path parameter repeated in the body or query would be silently dropped (the path wins): refuse it, so
      // that nobody believes they set an `id` (SECURITY 11, mass assignment).
      const shadowed = shadowedParameters(pathParameters, request);
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
      let status = 200;
      const headers: Record<string, string> = {};
      let matched = true;
      const res = {
        get statusCode() {
          return status;
        },
        set statusCode(value: number) {
          status = value;
        },
        setHeader: (key: string, value: string) => {
          if (key.toLowerCase() !== 'content-type') headers[key] = value;
        },
        end: (body: string) => {
          const prefix = `{"success":${status < 400},`;
          // An idempotent replay repeats the first answer's meta, so the whole body is the same, byte for byte.
          const tail = `"meta":${JSON.stringify(contexts.get(request)?.response.meta ?? meta(request))}}`;
          let payload: string;
          if (status < 400 && contexts.get(request)?.response.raw) payload = body;
          else if (status < 400) payload = `${prefix}"data":${body ?? 'null'},"error":null,${tail}`;
          else {
            const parsed = JSON.parse(body) as { data?: { code?: string; details?: unknown }; message?: string; code?: string };
            const error: ErrorBody =
              parsed.data?.code && parsed.data.code in ERROR_CODES
                ? {
                    code: parsed.data.code as ErrorBody['code'],
                    message: parsed.message ?? '',
                    ...(parsed.data.details ? { details: parsed.data.details as ErrorBody['details'] } : {}),
                  }
                : errorBody(undefined);
            status = ERROR_CODES[error.code].status;
            payload = `${prefix}"data":null,"error":${JSON.stringify(error)},${tail}`;
          }
          reply.code(status).headers(headers).type('application/json').send(payload);
        },
        once: reply.raw.once.bind(reply.raw),
        on: reply.raw.on.bind(reply.raw),
        off: reply.raw.off.bind(reply.raw),
        removeListener: reply.raw.removeListener.bind(reply.raw),
        emit: reply.raw.emit.bind(reply.raw),
        socket: reply.raw.socket,
        get headersSent() {
          return reply.sent;
        },
        // Read by the adapter when the connection closes: without it, every request aborts a signal (and builds a
        // DOMException) after it has already been answered.
        get writableEnded() {
          return reply.sent || reply.raw.writableEnded;
        },
      };
      const req = Object.assign(request, {
        once: request.raw.once.bind(request.raw),
        on: request.raw.on.bind(request.raw),
        off: request.raw.off.bind(request.raw),
        destroy: request.raw.destroy.bind(request.raw),
      });
      await handle(req as never, res as never, () => {
        matched = false;
      });
      if (!matched)
        return sendError(request, reply, {
          code: 'not_found',
          message: `No route ${request.method} ${request.url.split('?')[0]}`,
        });
      return reply;
    },
  });
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
        const outcome = await services.inFlight.run(() =>
          acceptSamlResponse(ctx, request.params.connection_id, request.body ?? {}),
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
 * Each application's OAuth 2.1 / OpenID Connect provider (oidc-provider, a Koa app) under its issuer path
 * `/oauth2/{application_id}`. A hook, before fastify reads the body: the provider parses its own form posts. Its
 * answers are OAuth's own (RFC 6749 errors, discovery JSON), not the envelope.
 */
function registerOAuth2Provider(app: FastifyInstance, services: Services) {
  app.addHook('onRequest', async (request, reply) => {
    const url = request.raw.url ?? '';
    const metadata = METADATA_PATH.exec(url);
    const match = metadata ? undefined : PROVIDER_PATH.exec(url);
    if (!metadata && !match) return;
    const applicationId = (metadata ?? match)![1]!.toLowerCase();
    const path = metadata ? `/.well-known/openid-configuration${metadata[2] ?? ''}` : `${match![2] ?? '/'}${match![3] ?? ''}`;
    if (path.startsWith('/interaction/')) return;
    reply.hijack();
    try {
      const handled = await services.inFlight.run(() =>
        handleProviderRequest(services, applicationId, path, request.raw, reply.raw),
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
      logUnhandled(request.log, error);
      if (!reply.raw.headersSent) reply.raw.writeHead(500, { 'content-type': 'application/json' });
      reply.raw.end(
        JSON.stringify({
          success: false,
          data: null,
          error: { code: 'internal_error', message: 'Internal error' },
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

interface PathRoute {
  method: string;
  /** The OpenAPI path (`/v1/users/{id}`): the route's name in metrics. */
  path: string;
  pattern: RegExp;
  parameters: string[];
}

/** Every REST route with path parameters, from the procedures' OpenAPI meta. */
/** Every REST route, literal paths before those with parameters (`/v1/users/merge` before `/v1/users/{id}`). */
function restRoutes(): PathRoute[] {
  const routes: PathRoute[] = [];
  for (const procedure of Object.values(appRouter._def.procedures) as unknown as Array<{ _def: { meta?: Meta } }>) {
    const openapi = procedure._def.meta?.openapi;
    if (!openapi) continue;
    const parameters = [...openapi.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
    const pattern = new RegExp(`^${openapi.path.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`);
    routes.push({ method: openapi.method, path: openapi.path, pattern, parameters });
  }
  return routes.sort((a, b) => a.parameters.length - b.parameters.length);
}

const routeOf = (routes: PathRoute[], request: FastifyRequest) => {
  const path = request.url.split('?')[0]!;
  return routes.find((r) => r.method === request.method && r.pattern.test(path));
};

function shadowedParameters(routes: PathRoute[], request: FastifyRequest): string[] {
  const route = routeOf(routes, request);
  if (!route) return [];
  const body = request.body && typeof request.body === 'object' ? (request.body as Record<string, unknown>) : {};
  const query = request.query as Record<string, unknown>;
  return route.parameters.filter((name) => name in body || name in query);
}

const require = createRequire(import.meta.url);

/** `/docs`: Swagger UI served from the installed package, so the reference works offline. */
async function registerDocs(app: FastifyInstance) {
  const dir = (require('swagger-ui-dist') as { getAbsoluteFSPath: () => string }).getAbsoluteFSPath();
  const assets: Record<string, string> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'application/javascript' };
  const files = Object.fromEntries(
    await Promise.all(Object.keys(assets).map(async (name) => [name, await readFile(join(dir, name))] as const)),
  );
  app.get('/docs', async (_request, reply) => reply.type('text/html').send(DOCS_HTML));
  app.get<{ Params: { file: string } }>('/docs/:file', async (request, reply) => {
    const type = assets[request.params.file];
    if (!type) return sendError(request, reply, { code: 'not_found', message: 'No such asset' });
    return reply.type(type).header('cache-control', 'public, max-age=86400').send(files[request.params.file]);
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
