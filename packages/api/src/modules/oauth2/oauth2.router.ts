import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import {
  CompleteInteractionInputSchema,
  CreateOAuth2ClientInputSchema,
  GrantIdParamSchema,
  GrantSchema,
  InteractionOutcomeSchema,
  InteractionParamSchema,
  InteractionSchema,
  OAuth2ClientSchema,
  OAuth2ClientWithSecretSchema,
  UpdateOAuth2ClientInputSchema,
  UserGrantParamSchema,
} from './oauth2.schema.ts';
import {
  completeInteraction,
  createClient,
  deleteClient,
  denyInteraction,
  getClient,
  getInteraction,
  listClients,
  listMyGrants,
  listUserGrants,
  revokeMyGrant,
  revokeUserGrant,
  rotateClientSecret,
  updateClient,
} from './oauth2.service.ts';

const tags = ['OAuth 2.0 provider'];
const none = z.strictObject({}).optional();

/** `oauth2.clients.*` (SK): the third-party apps allowed to sign users in with the application. */
export const oauth2Router = router({
  clients: router({
    create: secretKeyProcedure('oauth2:write')
      .meta({
        idempotent: true,
        successStatus: 201,
        openapi: { method: 'POST', path: '/v1/oauth2/clients', tags, summary: 'Register an OAuth client' },
      })
      .input(CreateOAuth2ClientInputSchema)
      .output(OAuth2ClientWithSecretSchema)
      .mutation(({ ctx, input }) => createClient(ctx, input)),
    list: secretKeyProcedure('oauth2:read')
      .meta({ openapi: { method: 'GET', path: '/v1/oauth2/clients', tags, summary: 'List OAuth clients, newest first' } })
      .input(none)
      .output(z.array(OAuth2ClientSchema))
      .query(({ ctx }) => listClients(ctx)),
    get: secretKeyProcedure('oauth2:read')
      .meta({ openapi: { method: 'GET', path: '/v1/oauth2/clients/{id}', tags, summary: 'Get an OAuth client' } })
      .input(IdParamSchema)
      .output(OAuth2ClientSchema)
      .query(({ ctx, input }) => getClient(ctx, input.id)),
    update: secretKeyProcedure('oauth2:write')
      .meta({ openapi: { method: 'PATCH', path: '/v1/oauth2/clients/{id}', tags, summary: 'Update an OAuth client' } })
      .input(UpdateOAuth2ClientInputSchema)
      .output(OAuth2ClientSchema)
      .mutation(({ ctx, input }) => updateClient(ctx, input)),
    delete: secretKeyProcedure('oauth2:write')
      .meta({
        openapi: {
          method: 'DELETE',
          path: '/v1/oauth2/clients/{id}',
          tags,
          summary: 'Delete an OAuth client and revoke its grants',
        },
      })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => deleteClient(ctx, input.id)),
    rotateSecret: secretKeyProcedure('oauth2:write')
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/oauth2/clients/{id}/rotate-secret',
          tags,
          summary: "Replace a confidential client's secret",
        },
      })
      .input(IdParamSchema)
      .output(OAuth2ClientWithSecretSchema)
      .mutation(({ ctx, input }) => rotateClientSecret(ctx, input.id)),
  }),
});

/** `users.grants.*` (SK): support's view of what a user authorized. */
export const userGrantsRouter = router({
  list: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users/{id}/grants', tags, summary: "A user's OAuth grants" } })
    .input(IdParamSchema)
    .output(z.array(GrantSchema))
    .query(({ ctx, input }) => listUserGrants(ctx, input.id)),
  revoke: secretKeyProcedure('users:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/users/{id}/grants/{grant_id}',
        tags,
        summary: "Revoke a user's grant and its tokens",
      },
    })
    .input(UserGrantParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => revokeUserGrant(ctx, input)),
});

/** `auth.me.grants.*` (ES★): S6 and its revocation. */
export const myGrantsRouter = router({
  list: signedInProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/auth/me/grants', tags, summary: 'The apps the signed-in user authorized' } })
    .input(none)
    .output(z.array(GrantSchema))
    .query(({ ctx }) => listMyGrants(ctx)),
  revoke: signedInProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/auth/me/grants/{id}',
        tags,
        summary: 'Revoke a grant and every token issued under it',
      },
    })
    .input(GrantIdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => revokeMyGrant(ctx, input.id)),
});

/** `auth.oauth2.*` (ES): the application's own sign-in page runs the login and consent interaction. */
export const interactionRouter = router({
  interaction: endUserProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/oauth2/interactions/{uid}', tags, summary: 'What a client asks the user for' } })
    .input(InteractionParamSchema)
    .output(InteractionSchema)
    .query(({ ctx, input }) => getInteraction(ctx, input.uid)),
  complete: signedInProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/oauth2/interactions/{uid}/complete',
        tags,
        summary: 'Approve: the signed-in user grants scopes',
      },
    })
    .input(CompleteInteractionInputSchema)
    .output(InteractionOutcomeSchema)
    .mutation(({ ctx, input }) => completeInteraction(ctx, input)),
  deny: signedInProcedure
    .meta({ openapi: { method: 'POST', path: '/v1/oauth2/interactions/{uid}/deny', tags, summary: 'Deny the request' } })
    .input(InteractionParamSchema)
    .output(InteractionOutcomeSchema)
    .mutation(({ ctx, input }) => denyInteraction(ctx, input.uid)),
});
