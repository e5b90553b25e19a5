import { AppError, type Services, storedLogo } from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';

/** A year: the answer for a URL whose `v` names the bytes' version never changes. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Without the version (or with an old one) the logo may change: browsers look again after five minutes. */
const REVALIDATE = 'public, max-age=300';

/** Whether an `If-None-Match` header names `etag` (weak comparison, as RFC 9110 says for this header), or is `*`. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim();
    return value === '*' || value.replace(/^W\//, '') === etag;
  });
}

/**
 * `GET /a/{application_id}/logo`: the logo an application uploaded, as the hosted pages (and its mail) show it. Public
 * (an image), not enveloped; 404 in the envelope for an unknown application or one without an uploaded logo. It is
 * answered as the type its bytes were checked to be, never sniffed by the browser, and in a sandbox that runs nothing
 * should a browser open it as a document.
 */
export function registerLogo(app: FastifyInstance, services: Services) {
  app.get<{ Params: { applicationId: string }; Querystring: { v?: unknown } }>(
    '/a/:applicationId/logo',
    { config: { route: '/a/{application_id}/logo' } },
    async (request, reply) => {
      const logo = await storedLogo(services.orm.em.fork(), request.params.applicationId);
      if (!logo) throw new AppError('not_found', 'Logo not found');
      const etag = `"${logo.sha256}"`;
      const versioned = request.query.v === logo.sha256.slice(0, 12);
      reply
        .header('etag', etag)
        .header('cache-control', versioned ? IMMUTABLE : REVALIDATE)
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "default-src 'none'; sandbox")
        // The hosted pages of a custom domain show it from the base URL's origin.
        .header('cross-origin-resource-policy', 'cross-origin');
      if (matches(request.headers['if-none-match'], etag)) return reply.code(304).send();
      return reply.type(logo.contentType).send(logo.data);
    },
  );
}
