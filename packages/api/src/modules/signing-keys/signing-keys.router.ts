import { z } from 'zod';
import type { Context } from '../../context.ts';
import { notFound } from '../../errors.ts';
import { IdParamSchema, text } from '../../lib/schemas.ts';
import { publicProcedure, router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { ownApplication } from '../applications/applications.service.ts';
import { resolveApplication } from '../applications/callers.ts';
import { jwks, rotateSigningKey } from './signing-keys.service.ts';

const tags = ['Signing keys'];
const JwkSchema = z
  .object({
    kty: z.literal('OKP'),
    crv: z.literal('Ed25519'),
    x: text(),
    kid: text(),
    alg: z.literal('EdDSA'),
    use: z.literal('sig'),
  })
  .meta({ id: 'Jwk' });
const JwksSchema = z.object({ keys: z.array(JwkSchema) }).meta({ id: 'Jwks' });

/** JWKS documents are public and cacheable; verifiers refetch on an unknown `kid`. */
function cacheable(ctx: Context) {
  ctx.response.headers['cache-control'] = 'public, max-age=300';
  ctx.response.headers['access-control-allow-origin'] = '*';
}

const DiscoverySchema = z
  .object({
    issuer: text().meta({ description: 'The `iss` of access tokens: the service base URL (GATEHOUSE_BASE_URL)' }),
    jwks_uri: text().meta({ description: "The application's JWKS" }),
    subject_types_supported: z.array(z.literal('public')),
    access_token_signing_alg_values_supported: z.array(z.literal('EdDSA')),
    audience: text().meta({ description: 'The `aud` of access tokens: the application id' }),
  })
  .meta({ id: 'OpenIdConfiguration' });

export const signingKeysRouter = router({
  discovery: publicProcedure
    .meta({
      envelope: false,
      openapi: {
        method: 'GET',
        path: '/v1/applications/{id}/.well-known/openid-configuration',
        tags,
        summary: "Discovery of the application's token verification (not enveloped)",
        description:
          'What a generic JWT middleware needs to verify access tokens without custom headers: the issuer, the JWKS ' +
          'URL and the audience. Access tokens are issued by the service itself, so `issuer` is the base URL, not ' +
          'this document\u2019s prefix: point a strict discovery client at `jwks_uri`, `issuer` and `audience` directly.',
      },
    })
    .input(IdParamSchema)
    .output(DiscoverySchema)
    .query(async ({ ctx, input }) => {
      if (!(await ctx.em.count(ApplicationEntity, { id: input.id }))) throw notFound('Application');
      cacheable(ctx);
      return {
        issuer: ctx.services.baseUrl,
        jwks_uri: `${ctx.services.baseUrl}/v1/applications/${input.id}/jwks.json`,
        subject_types_supported: ['public' as const],
        access_token_signing_alg_values_supported: ['EdDSA' as const],
        audience: input.id,
      };
    }),
  jwks: publicProcedure
    .meta({
      envelope: false,
      openapi: {
        method: 'GET',
        path: '/v1/applications/{id}/jwks.json',
        tags,
        summary: "The application's public keys (JWKS, not enveloped)",
      },
    })
    .input(IdParamSchema)
    .output(JwksSchema)
    .query(async ({ ctx, input }) => {
      if (!(await ctx.em.count(ApplicationEntity, { id: input.id }))) throw notFound('Application');
      cacheable(ctx);
      return jwks(ctx.em, input.id) as Promise<z.infer<typeof JwksSchema>>;
    }),
  wellKnown: publicProcedure
    .meta({
      envelope: false,
      openapi: {
        method: 'GET',
        path: '/v1/.well-known/jwks.json',
        tags,
        summary: 'The JWKS of the application in x-application-id',
      },
    })
    .input(z.strictObject({}).optional())
    .output(JwksSchema)
    .query(async ({ ctx }) => {
      const application = await resolveApplication(ctx);
      cacheable(ctx);
      // One URL, one document per application: caches must key on the header.
      ctx.response.headers.vary = 'x-application-id';
      return jwks(ctx.em, application.id) as Promise<z.infer<typeof JwksSchema>>;
    }),
  rotate: secretKeyProcedure('settings:write')
    .meta({
      openapi: { method: 'POST', path: '/v1/applications/{id}/signing-keys/rotate', tags, summary: 'Rotate the signing key' },
    })
    .input(IdParamSchema)
    .output(JwksSchema.extend({ kid: text().meta({ description: 'The new active key' }) }).meta({ id: 'RotatedKeys' }))
    .mutation(({ ctx, input }) => rotateSigningKey(ctx, ownApplication(ctx, input.id).id) as never),
});
