import { generateOpenApiDocument, type OpenAPIObject } from 'trpc-to-openapi';
import { ERROR_CODES, type ErrorCode } from './errors.ts';
import { service } from './modules.ts';
import { exampleOf } from './openapi-examples.ts';
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

/** A typical error of each status, for the documented examples. */
const ERROR_EXAMPLES: Record<number, [ErrorCode, string]> = {
  400: ['invalid_json', 'The body is not valid JSON'],
  401: ['invalid_api_key', 'Invalid API key'],
  403: ['insufficient_scope', 'This key lacks the users:write scope'],
  404: ['not_found', 'User not found'],
  409: ['conflict', 'Already exists'],
  413: ['payload_too_large', 'The body is larger than 1 MiB'],
  415: ['unsupported_media_type', 'Send the body as application/json'],
  422: ['validation_failed', 'The request does not match the schema'],
  429: ['rate_limited', 'Too many attempts; try again later'],
  500: ['internal_error', 'Internal error'],
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
  if (meta.rateLimited) statuses.add(429);
  return [...statuses].sort();
}

/** Walks the router for the meta of every REST procedure, keyed `METHOD path`. */
function proceduresByRoute(): Map<string, Meta> {
  const routes = new Map<string, Meta>();
  // tRPC types _def.procedures as its router record; every value is a procedure with its meta.
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
      '`{success, data, error, meta}`; `data` is described per operation, errors carry `error.code`. The TypeScript ' +
      'SDK uses the tRPC endpoint at `/trpc` instead: the same procedures, inputs, outputs and error codes, and like ' +
      '`/v1` a public, versioned surface.',
    // the document is rewritten as plain JSON below (envelopes, statuses) and checked as OpenAPIObject on the way out.
  }) as Json;
  const routes = proceduresByRoute();
  const envelopes: Json = {};
  // the document is walked as plain JSON: its paths and operations are objects.
  for (const [path, item] of Object.entries(doc.paths as Json)) {
    // a path item's values are operations, objects too
    for (const [method, operation] of Object.entries(item as Json) as Array<[string, Json]>) {
      const meta = routes.get(`${method} ${path}`);
      if (!meta) throw new Error(`No procedure behind ${method} ${path}`);
      const data = operation.responses['200'].content['application/json'].schema;
      const status = String(meta.successStatus ?? 200);
      const body = operation.requestBody?.content?.['application/json'];
      if (body) body.example = exampleOf(body.schema, doc.components.schemas);
      const example = exampleOf(data, doc.components.schemas);
      operation.responses = {
        [status]: {
          description: meta.successStatus === 201 ? 'Created' : 'Success',
          content: meta.stream
            ? Object.fromEntries(
                Object.entries(meta.stream).map(([type, example]) => [type, { schema: { type: 'string' }, example }]),
              )
            : {
                'application/json':
                  meta.envelope === false
                    ? { schema: data, example }
                    : {
                        schema: namedEnvelope(envelopes, data, operation.operationId),
                        example: { success: true, data: example, error: null, meta: EXAMPLE_META },
                      },
              },
        },
        ...Object.fromEntries(errorStatuses(method, meta).map((s) => [s, { $ref: `#/components/responses/Error${s}` }])),
      };
      operation.security = SECURITY[meta.caller ?? 'public'];
      if (meta.idempotent) {
        operation.parameters = [...(operation.parameters ?? []), IDEMPOTENCY_KEY];
      }
      if (meta.scope) {
        operation['x-required-scope'] = meta.scope;
        operation.description = `${operation.description ? `${operation.description}\n\n` : ''}Required scope: \`${meta.scope}\`.`;
      }
    }
  }
  const schemas = Object.fromEntries(
    // the document is walked as plain JSON: its schemas are objects.
    Object.entries(doc.components.schemas as Json).filter(([name]) => !name.startsWith('error.')),
  );
  doc.components = {
    ...doc.components,
    schemas: { ...schemas, ResponseMeta: RESPONSE_META, Error: ERROR, ErrorEnvelope: ERROR_ENVELOPE, ...envelopes },
    responses: Object.fromEntries(
      Object.entries(ERROR_DESCRIPTIONS).map(([status, description]) => {
        const documented = ERROR_EXAMPLES[Number(status)];
        if (!documented) throw new Error(`No error example for ${status}`);
        const [code, message] = documented;
        const error = {
          code,
          message,
          ...(code === 'validation_failed' ? { details: [{ path: 'email', message: 'Invalid email address' }] } : {}),
        };
        const example = { success: false, data: null, error, meta: EXAMPLE_META };
        return [
          `Error${status}`,
          { description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' }, example } } },
        ];
      }),
    ),
    securitySchemes: {
      operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token (GATEHOUSE_OPERATOR_TOKEN)' },
      secretKey: { type: 'http', scheme: 'bearer', description: 'A secret API key, sk_test_… or sk_live_…' },
      accessToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An end-user access token (EdDSA JWT)' },
      applicationId: { type: 'apiKey', in: 'header', name: 'x-application-id', description: 'The publishable application id' },
    },
  };
  Object.assign(doc.paths, SAML_HTTP_ROUTES, OAUTH_HTTP_ROUTES);
  doc.tags = service.tags;
  doc.info.license = { name: 'MIT', identifier: 'MIT' };
  // built by trpc-to-openapi and rewritten above as plain JSON; openapi.unit/lint checks the result.
  return doc as OpenAPIObject;
}

const CONNECTION_ID = {
  name: 'connection_id',
  in: 'path',
  required: true,
  schema: { type: 'string', format: 'uuid' },
  example: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f',
};
const errors = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((s) => [s, { $ref: `#/components/responses/Error${s}` }]));

/** The `location` of a 303 that sends the browser on. */
const LOCATION_HEADER: Json = {
  location: { description: 'Where the browser goes next', schema: { type: 'string', format: 'uri' } },
};

/**
 * The two SAML routes that are not procedures (apps/server registers them): the IdP speaks form posts and XML, not
 * JSON, and neither answer is enveloped (CONTRACT §1).
 */
const SAML_HTTP_ROUTES: Json = {
  '/v1/saml/metadata/{connection_id}': {
    get: {
      operationId: 'saml-metadata',
      tags: ['SAML SSO'],
      summary: "Our SP metadata for a connection (for the IdP's administrator)",
      description:
        'Entity id (this URL), the ACS (HTTP-POST), NameID formats, `WantAssertionsSigned="true"`. Public; not enveloped.',
      security: [],
      parameters: [CONNECTION_ID],
      responses: {
        200: {
          description: 'SAML 2.0 metadata (EntityDescriptor with an SPSSODescriptor)',
          content: {
            'application/samlmetadata+xml': {
              schema: { type: 'string' },
              example:
                '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://auth.example.com/v1/saml/metadata/01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f">…</md:EntityDescriptor>',
            },
          },
        },
        ...errors(404, 500),
      },
    },
  },
  '/v1/saml/acs/{connection_id}': {
    post: {
      operationId: 'saml-acs',
      tags: ['SAML SSO'],
      summary: "Assertion Consumer Service: the IdP's form post (HTTP-POST binding)",
      description:
        'Validates the SAML response and redirects (303) to the `redirect_uri` of the request it answers with `?code=` ' +
        '(single use, 60 s; exchange it at `/v1/auth/sso/complete`) or `?error=` (`saml_response_invalid`, `access_denied`). ' +
        'A response that names no request of ours or cannot be read safely is 401 `assertion_failed`; over 256 KB, 413.',
      security: [],
      parameters: [CONNECTION_ID],
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: {
                SAMLResponse: { type: 'string', description: 'base64 of the Response XML' },
                RelayState: { type: 'string' },
              },
              required: ['SAMLResponse'],
            },
            example: {
              SAMLResponse: 'PHNhbWxwOlJlc3BvbnNlIHhtbG5zOnNhbWxwPSJ1cm46b2FzaXM6bmFtZXM6dGM6U0FNTDoyLjA6cHJvdG9jb2wiPg==',
              RelayState: '_5f0c2a57',
            },
          },
        },
      },
      responses: {
        303: {
          description: 'Back to the application: `redirect_uri?code=…` or `?error=…`',
          headers: LOCATION_HEADER,
        },
        ...errors(401, 404, 413, 415, 429, 500),
      },
    },
  },
};

/** The redirect URI every OAuth client registers (apps/server registers it): a browser navigation, not JSON. */
const OAUTH_REDIRECT: Json = {
  tags: ['OAuth providers'],
  description:
    'Sends the browser on (303) to the `redirect_uri` its `state` was started with, carrying `code` and `state` (or ' +
    '`error`); nothing is spent here. An unknown or finished `state` is 401 `invalid_verification` and goes nowhere.',
  security: [],
  responses: {
    303: {
      description: 'On to the application: `redirect_uri?code=…&state=…` or `?error=…&state=…`',
      headers: LOCATION_HEADER,
    },
    ...errors(401, 500),
  },
};
const OAUTH_HTTP_ROUTES: Json = {
  '/v1/auth/oauth/redirect': {
    get: {
      ...OAUTH_REDIRECT,
      operationId: 'oauth-redirect',
      summary: "The providers' redirect URI (register `{GATEHOUSE_BASE_URL}/v1/auth/oauth/redirect`)",
      parameters: ['code', 'state', 'error'].map((name) => ({
        name,
        in: 'query',
        required: name === 'state',
        schema: { type: 'string' },
      })),
    },
    post: {
      ...OAUTH_REDIRECT,
      operationId: 'oauth-redirect-form',
      summary: "The providers' redirect URI, as a form post (Apple's `response_mode=form_post`)",
      requestBody: {
        required: true,
        content: {
          'application/x-www-form-urlencoded': {
            schema: {
              type: 'object',
              properties: { code: { type: 'string' }, state: { type: 'string' }, error: { type: 'string' } },
              required: ['state'],
            },
            example: { code: 'c0de', state: 'st4te' },
          },
        },
      },
    },
  },
};

/** Creating calls take an idempotency key (lib/idempotency.ts). */
const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes a retry safe: the same key with the same request within 24 h answers the first response again ' +
    '(`idempotent-replayed: true`), with another request 422 `idempotency_key_reused`; a retry sent while the first ' +
    'runs waits for it and answers its response.',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
  example: '5f0c2a57-6c4e-4c0b-9d43-2f7a1f4a9e11',
};

const EXAMPLE_META = { timestamp: '2026-11-24T09:30:00.000Z', request_id: '01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f' };

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
      oneOf: [
        {
          type: 'array',
          items: {
            type: 'object',
            properties: { path: { type: 'string' }, message: { type: 'string' } },
            required: ['path', 'message'],
          },
        },
        {
          type: 'object',
          description: '`sso_required`: the organization whose SSO is the way in',
          properties: { organization_id: { type: 'string', format: 'uuid' } },
          required: ['organization_id'],
        },
      ],
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

const SCHEMA_REF = /^#\/components\/schemas\/(.+)$/;
const pascalCase = (id: string) => id.replace(/(?:^|[-_.])([a-z0-9])/gi, (_m, c: string) => c.toUpperCase());

/**
 * The success envelope of an operation as a named component, so that a generated client gets one named type per
 * result (`UserEnvelope`, `ApiKeyListEnvelope`) instead of an anonymous wrapper per operation: named after the data's
 * component (`X` → `XEnvelope`, an array of `X` → `XListEnvelope`), else after the operation. Operations with the same
 * data share it. Answers the `$ref` to it.
 */
function namedEnvelope(envelopes: Json, data: Json, operationId: string): Json {
  const item = data.type === 'array' ? data.items : undefined;
  const name =
    typeof data.$ref === 'string'
      ? `${SCHEMA_REF.exec(data.$ref)?.[1]}Envelope`
      : typeof item?.$ref === 'string'
        ? `${SCHEMA_REF.exec(item.$ref)?.[1]}ListEnvelope`
        : `${pascalCase(operationId)}Envelope`;
  const envelope = successEnvelope(data);
  if (envelopes[name] && JSON.stringify(envelopes[name]) !== JSON.stringify(envelope)) {
    throw new Error(`Two different envelopes would be named ${name} (operation ${operationId})`);
  }
  envelopes[name] = envelope;
  return { $ref: `#/components/schemas/${name}` };
}
