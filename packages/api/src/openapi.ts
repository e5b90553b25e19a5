import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { ERROR_CODES } from './errors.ts';
import { appRouter } from './router.ts';
import type { CallerKind, Meta } from './trpc.ts';

type Json = Record<string, any>;

const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Malformed JSON body (`invalid_json`)',
  401: 'Missing or invalid credentials, or no application resolved',
  403: 'The credential lacks the scope or the right for this operation (`insufficient_scope`, `origin_not_allowed`, `step_up_required`, `access_denied`)',
  404: 'No such resource in this application',
  409: 'Conflicts with an existing resource',
  413: 'Body larger than 1 MiB (`payload_too_large`)',
  415: 'Body not sent as application/json (`unsupported_media_type`)',
  422: 'Well-formed JSON that breaks the schema or a business rule; `details` lists the failing paths',
  429: 'Too many requests; see the `retry-after` header',
  500: 'Internal error (never with internals in the message)',
};

const SECURITY: Record<CallerKind, Json[]> = {
  operator: [{ operatorToken: [] }],
  secret_key: [{ secretKey: [], applicationId: [] }],
  end_user: [{ applicationId: [] }],
  signed_in: [{ accessToken: [], applicationId: [] }],
  public: [],
};

function errorStatuses(method: string, meta: Meta): number[] {
  const statuses = new Set([422, 500]);
  if (method !== 'get' && method !== 'delete') for (const s of [400, 413, 415]) statuses.add(s);
  if (meta.caller !== 'public') statuses.add(401);
  // 403: a scope (secret keys); an origin outside the allowlist, or a step-up (end users).
  if (meta.caller === 'secret_key' || meta.caller === 'end_user' || meta.caller === 'signed_in') statuses.add(403);
  if (meta.caller !== 'operator' || method === 'delete') statuses.add(404);
  if (method === 'post' || method === 'patch' || method === 'put') statuses.add(409);
  return [...statuses].sort();
}

/** Walks the router for the meta of every REST procedure, keyed `METHOD path`. */
function proceduresByRoute(): Map<string, Meta> {
  const routes = new Map<string, Meta>();
  for (const procedure of Object.values(appRouter._def.procedures) as unknown as Array<{ _def: { meta?: Meta } }>) {
    const meta = procedure._def.meta;
    if (meta?.openapi) routes.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, meta);
  }
  return routes;
}

/**
 * The OpenAPI 3.1 document of the REST surface: trpc-to-openapi's document from the same zod schemas, rewritten
 * to describe what the wire really carries — the envelope, our success statuses, our error envelope and the
 * credentials each route takes.
 */
export function buildOpenApiDocument(baseUrl: string, version = '0.1.0'): OpenAPIObject {
  const doc = generateOpenApiDocument(appRouter, {
    title: 'Gatehouse API',
    version,
    baseUrl,
    description:
      'Multi-tenant identity and access service. Every response with a body is an envelope ' +
      '`{success, data, error, meta}`; `data` is described per operation, errors carry `error.code`.',
  }) as Json;
  const routes = proceduresByRoute();
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    for (const [method, operation] of Object.entries(item as Json) as Array<[string, Json]>) {
      const meta = routes.get(`${method} ${path}`);
      if (!meta) throw new Error(`No procedure behind ${method} ${path}`);
      const data = operation.responses['200'].content['application/json'].schema;
      const status = String(meta.successStatus ?? 200);
      operation.responses = {
        [status]: {
          description: meta.successStatus === 201 ? 'Created' : 'Success',
          content: { 'application/json': { schema: meta.envelope === false ? data : successEnvelope(data) } },
        },
        ...Object.fromEntries(errorStatuses(method, meta).map((s) => [s, { $ref: `#/components/responses/Error${s}` }])),
      };
      operation.security = SECURITY[meta.caller ?? 'public'];
      if (meta.scope) {
        operation['x-required-scope'] = meta.scope;
        operation.description = `${operation.description ? `${operation.description}\n\n` : ''}Required scope: \`${meta.scope}\`.`;
      }
    }
  }
  const schemas = Object.fromEntries(
    Object.entries(doc.components.schemas as Json).filter(([name]) => !name.startsWith('error.')),
  );
  doc.components = {
    ...doc.components,
    schemas: { ...schemas, ResponseMeta: RESPONSE_META, Error: ERROR, ErrorEnvelope: ERROR_ENVELOPE },
    responses: Object.fromEntries(
      Object.entries(ERROR_DESCRIPTIONS).map(([status, description]) => [
        `Error${status}`,
        { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } } },
      ]),
    ),
    securitySchemes: {
      operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token (GATEHOUSE_OPERATOR_TOKEN)' },
      secretKey: { type: 'http', scheme: 'bearer', description: 'A secret API key, sk_test_… or sk_live_…' },
      accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An end-user access token (EdDSA JWT)' },
      applicationId: { type: 'apiKey', in: 'header', name: 'x-application-id', description: 'The publishable application id' },
    },
  };
  return doc as OpenAPIObject;
}

const RESPONSE_META = {
  type: 'object',
  properties: { timestamp: { type: 'string', format: 'date-time' }, request_id: { type: 'string' } },
  required: ['timestamp', 'request_id'],
};

const ERROR = {
  type: 'object',
  properties: {
    code: { type: 'string', enum: Object.keys(ERROR_CODES) },
    message: { type: 'string' },
    details: {
      type: 'array',
      items: {
        type: 'object',
        properties: { path: { type: 'string' }, message: { type: 'string' } },
        required: ['path', 'message'],
      },
    },
  },
  required: ['code', 'message'],
};

const ERROR_ENVELOPE = {
  type: 'object',
  properties: {
    success: { const: false },
    data: { type: 'null' },
    error: { $ref: '#/components/schemas/Error' },
    meta: { $ref: '#/components/schemas/ResponseMeta' },
  },
  required: ['success', 'data', 'error', 'meta'],
};

const successEnvelope = (data: Json) => ({
  type: 'object',
  properties: { success: { const: true }, data, error: { type: 'null' }, meta: { $ref: '#/components/schemas/ResponseMeta' } },
  required: ['success', 'data', 'error', 'meta'],
});
