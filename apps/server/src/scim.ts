import {
  AppError,
  ERROR_CODES,
  handleScimRequest,
  MAX_BODY_DEPTH,
  ScimError,
  type Services,
  tooDeep,
  withRequest,
} from '@gatehouse/api';
import type { FastifyInstance, FastifyReply } from 'fastify';

const ONE_MIB = 1024 * 1024;
const SCIM_JSON = 'application/scim+json; charset=utf-8';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

function send(reply: FastifyReply, error: ScimError) {
  return reply.code(error.status).type(SCIM_JSON).header('cache-control', 'no-store').send(error.body());
}

/**
 * Each directory's SCIM 2.0 service (CONTRACT §8, RFC 7644) at `/scim/v2/{directory_id}/…`: what an identity provider
 * calls, so its own format — `application/scim+json`, not enveloped, errors as RFC 7644 §3.12 — in a plugin scope of
 * its own that reads `application/scim+json` and `application/json` bodies. The directory's bearer token authenticates;
 * the work is `handleScimRequest` in the API package.
 */
export async function registerScim(app: FastifyInstance, services: Services) {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      /^application\/(scim\+)?json(\s*;.*)?$/i,
      { parseAs: 'string', bodyLimit: ONE_MIB },
      (_req, body, done) => {
        const text = body as string;
        if (text.trim() === '') return done(null, undefined);
        try {
          const parsed = JSON.parse(text);
          if (tooDeep(parsed, MAX_BODY_DEPTH))
            return done(new ScimError(400, 'The body nests too deeply', 'invalidSyntax'), undefined);
          done(null, parsed);
        } catch {
          done(new ScimError(400, 'The body is not valid JSON', 'invalidSyntax'), undefined);
        }
      },
    );
    scope.setErrorHandler((error, request, reply) => {
      if (error instanceof ScimError) return send(reply, error);
      const code = (error as { code?: string }).code;
      if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') return send(reply, new ScimError(413, 'The body is larger than 1 MiB'));
      if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' || code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH') {
        return send(reply, new ScimError(415, 'Send the body as application/scim+json'));
      }
      if (code?.startsWith('FST_ERR_CTP')) return send(reply, new ScimError(400, 'The body is not valid JSON', 'invalidSyntax'));
      if (error instanceof AppError) {
        // A refusal from below (a database outage's 503, with its retry-after): its status, in SCIM's format.
        reply.headers(error.headers ?? {});
        return send(reply, new ScimError(ERROR_CODES[error.code].status, error.message));
      }
      request.log.error({ err: { type: (error as Error).name } }, 'unhandled SCIM error');
      return send(reply, new ScimError(500, 'Internal error'));
    });
    const handler = async (
      request: {
        method: string;
        params: unknown;
        query: unknown;
        body: unknown;
        ip: string;
        headers: { authorization?: string | undefined; 'user-agent'?: string | undefined };
      },
      reply: FastifyReply,
    ) => {
      // fastify's params of this route: the directory id and the rest of the path (`*`)
      const params = request.params as { directory_id: string; '*'?: string };
      const segments = (params['*'] ?? '').split('/').filter(Boolean);
      const origin = { ip: request.ip, userAgent: request.headers['user-agent'] ?? null };
      const answer = await services.inFlight.run(() =>
        withRequest(origin, () =>
          handleScimRequest(services, services.orm.em.fork(), {
            method: request.method,
            directoryId: params.directory_id,
            segments,
            // fastify's query parser answers an object of strings (or arrays of them, read as absent here)
            query: Object.fromEntries(
              Object.entries(request.query as Record<string, unknown>).filter(([, v]) => typeof v === 'string'),
            ),
            body: request.body,
            authorization: request.headers.authorization,
          }),
        ),
      );
      reply.code(answer.status).header('cache-control', 'no-store');
      if (answer.location) reply.header('location', answer.location);
      if (answer.body === undefined) return reply.send();
      return reply.type(SCIM_JSON).send(JSON.stringify(answer.body));
    };
    scope.route({ method: [...METHODS], url: '/scim/v2/:directory_id', config: { route: '/scim/v2/{directory_id}' }, handler });
    scope.route({
      method: [...METHODS],
      url: '/scim/v2/:directory_id/*',
      config: { route: '/scim/v2/{directory_id}/…' },
      handler,
    });
  });
}
