import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { endUserInStatementProcedure, endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import { SignInResultSchema } from '../sign-in/sign-in.schema.ts';
import {
  IdentitySchema,
  OAuthCallbackInputSchema,
  OAuthProviderSettingSchema,
  ProviderParamsSchema,
  PutOAuthProviderInputSchema,
  StartOAuthInputSchema,
  StartOAuthOutputSchema,
  StartOAuthSignInInputSchema,
  UserIdentityParamsSchema,
} from './oauth.schema.ts';
import { listOAuthProviders, putOAuthProvider, resetOAuthProvider } from './oauth.service.ts';
import {
  linkCallback,
  listIdentities,
  listUserIdentities,
  oauthCallback,
  startLink,
  startOAuth,
  unlinkIdentity,
  unlinkUserIdentity,
} from './oauth-flow.service.ts';

const tags = ['OAuth providers'];
const base = '/v1/applications/{id}/providers/oauth';

/** S3 and its siblings: each application's social sign-in providers (secret key). */
export const providersRouter = router({
  list: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: base, tags, summary: 'Every OAuth provider and its setting' } })
    .input(IdParamSchema)
    .output(z.array(OAuthProviderSettingSchema))
    .query(({ ctx, input }) => listOAuthProviders(ctx, input.id)),
  put: secretKeyProcedure('settings:write')
    .meta({
      openapi: {
        method: 'PUT',
        path: `${base}/{provider}`,
        tags,
        summary: 'Configure an OAuth provider',
        description:
          'Enabling needs client_id and client_secret, or use_shared_dev_credentials (development applications). ' +
          'Register `{GATEHOUSE_BASE_URL}/v1/auth/oauth/redirect` as the redirect URI of your OAuth client. ' +
          'An oidc `issuer` is loaded when saved: a discovery document that cannot be used is 422 `invalid_url` ' +
          'with the reason.',
      },
    })
    .input(PutOAuthProviderInputSchema)
    .output(OAuthProviderSettingSchema)
    .mutation(({ ctx, input }) => putOAuthProvider(ctx, input)),
  reset: secretKeyProcedure('settings:write')
    .meta({
      openapi: { method: 'DELETE', path: `${base}/{provider}`, tags, summary: 'Reset an OAuth provider (disabled, no secret)' },
    })
    .input(ProviderParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => resetOAuthProvider(ctx, input)),
});

const signInTags = ['End-user sign-in'];

/** The browser's side of social sign-in (ES), mounted under `auth.oauth`. */
export const oauthRouter = router({
  start: endUserProcedure
    .meta({
      rateLimited: true,
      openapi: {
        method: 'POST',
        path: '/v1/auth/oauth/{provider}/start',
        tags: signInTags,
        summary: 'Start a social sign-in: the provider URL to send the browser to',
        description:
          'After the provider, the browser comes back to `redirect_uri?code=…&state=…` (or `?error=…&state=…`); ' +
          'post both to `/v1/auth/oauth/{provider}/callback` within 10 minutes. A provider that cannot be reached ' +
          '(here or at the callback) is 503 `service_unavailable` naming it, with `retry-after`.',
      },
    })
    .input(StartOAuthSignInInputSchema)
    .output(StartOAuthOutputSchema)
    .mutation(({ ctx, input }) => startOAuth(ctx, input)),
  callback: endUserInStatementProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/auth/oauth/{provider}/callback',
        tags: signInTags,
        summary: 'Finish a social sign-in with the code and state of the redirect (single use)',
      },
    })
    .input(OAuthCallbackInputSchema)
    .output(SignInResultSchema)
    .mutation(({ ctx, input }) => oauthCallback(ctx, input)),
});

/** `users.identities.*` (SK): support's view of a user's linked OAuth and SAML accounts, and unlinking one. */
export const userIdentitiesRouter = router({
  list: secretKeyProcedure('users:read')
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/users/{id}/identities',
        tags: ['Users'],
        summary: "A user's linked OAuth and SAML accounts",
      },
    })
    .input(IdParamSchema)
    .output(z.array(IdentitySchema))
    .query(({ ctx, input }) => listUserIdentities(ctx, input.id)),
  remove: secretKeyProcedure('users:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/users/{id}/identities/{identity_id}',
        tags: ['Users'],
        summary: "Unlink a user's OAuth or SAML account (support; never the last way to sign in)",
      },
    })
    .input(UserIdentityParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => unlinkUserIdentity(ctx, input.id, input.identity_id)),
});

/** The signed-in user's linked accounts (ES★), mounted under `auth.identities`. */
export const identitiesRouter = router({
  list: signedInProcedure
    .meta({
      openapi: { method: 'GET', path: '/v1/auth/identities', tags: signInTags, summary: 'Your linked OAuth and SAML accounts' },
    })
    .input(z.strictObject({}).optional())
    .output(z.array(IdentitySchema))
    .query(({ ctx }) => listIdentities(ctx)),
  delete: signedInProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/auth/identities/{id}',
        tags: signInTags,
        summary: 'Unlink an account (never the last way to sign in; aal 2 when you have a second factor)',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => unlinkIdentity(ctx, input.id)),
  oauth: router({
    start: signedInProcedure
      .meta({
        rateLimited: true,
        openapi: {
          method: 'POST',
          path: '/v1/auth/identities/oauth/{provider}/start',
          tags: signInTags,
          summary: 'Start linking a provider account to you',
        },
      })
      .input(StartOAuthInputSchema)
      .output(StartOAuthOutputSchema)
      .mutation(({ ctx, input }) => startLink(ctx, input)),
    callback: signedInProcedure
      .meta({
        successStatus: 201,
        openapi: {
          method: 'POST',
          path: '/v1/auth/identities/oauth/{provider}/callback',
          tags: signInTags,
          summary: 'Finish linking with the code and state of the redirect',
        },
      })
      .input(OAuthCallbackInputSchema)
      .output(IdentitySchema)
      .mutation(({ ctx, input }) => linkCallback(ctx, input)),
  }),
});
