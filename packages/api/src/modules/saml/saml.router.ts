import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { endUserProcedure } from '../applications/callers.ts';
import { SignInResultSchema } from '../sign-in/sign-in.schema.ts';
import {
  CompleteSsoInputSchema,
  CreateFromMetadataInputSchema,
  CreateSamlConnectionInputSchema,
  SamlConnectionSchema,
  StartSsoInputSchema,
  StartSsoOutputSchema,
  UpdateSamlConnectionInputSchema,
} from './saml.schema.ts';
import {
  createSamlConnection,
  createSamlConnectionFromMetadata,
  deleteSamlConnection,
  getSamlConnection,
  listSamlConnections,
  setSamlConnectionEnabled,
  updateSamlConnection,
} from './saml.service.ts';
import { completeSso, startSso } from './sso.service.ts';

const tags = ['SAML SSO'];
const none = z.strictObject({}).optional();

/** Management of SAML connections (secret key). The ACS and SP metadata are plain HTTP routes of the server. */
export const samlRouter = router({
  connections: router({
    create: secretKeyProcedure('saml:write')
      .meta({
        idempotent: true,
        successStatus: 201,
        openapi: { method: 'POST', path: '/v1/saml/connections', tags, summary: 'Create a SAML connection' },
      })
      .input(CreateSamlConnectionInputSchema)
      .output(SamlConnectionSchema)
      .mutation(({ ctx, input }) => createSamlConnection(ctx, input)),
    createFromMetadata: secretKeyProcedure('saml:write')
      .meta({
        idempotent: 'own-write',
        successStatus: 201,
        openapi: {
          method: 'POST',
          path: '/v1/saml/connections/from-metadata',
          tags,
          summary: "Create a SAML connection from the IdP's metadata (XML, or a URL fetched once)",
        },
      })
      .input(CreateFromMetadataInputSchema)
      .output(SamlConnectionSchema)
      .mutation(({ ctx, input }) => createSamlConnectionFromMetadata(ctx, input)),
    list: secretKeyProcedure('saml:read')
      .meta({ openapi: { method: 'GET', path: '/v1/saml/connections', tags, summary: 'List SAML connections, newest first' } })
      .input(none)
      .output(z.array(SamlConnectionSchema))
      .query(({ ctx }) => listSamlConnections(ctx)),
    get: secretKeyProcedure('saml:read')
      .meta({ openapi: { method: 'GET', path: '/v1/saml/connections/{id}', tags, summary: 'Get a SAML connection' } })
      .input(IdParamSchema)
      .output(SamlConnectionSchema)
      .query(({ ctx, input }) => getSamlConnection(ctx, input.id)),
    update: secretKeyProcedure('saml:write')
      .meta({ openapi: { method: 'PATCH', path: '/v1/saml/connections/{id}', tags, summary: 'Update a SAML connection' } })
      .input(UpdateSamlConnectionInputSchema)
      .output(SamlConnectionSchema)
      .mutation(({ ctx, input }) => updateSamlConnection(ctx, input)),
    enable: secretKeyProcedure('saml:write')
      .meta({ openapi: { method: 'POST', path: '/v1/saml/connections/{id}/enable', tags, summary: 'Enable a SAML connection' } })
      .input(IdParamSchema)
      .output(SamlConnectionSchema)
      .mutation(({ ctx, input }) => setSamlConnectionEnabled(ctx, input.id, true)),
    disable: secretKeyProcedure('saml:write')
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/saml/connections/{id}/disable',
          tags,
          summary: 'Disable a SAML connection (every response is refused until enabled)',
        },
      })
      .input(IdParamSchema)
      .output(SamlConnectionSchema)
      .mutation(({ ctx, input }) => setSamlConnectionEnabled(ctx, input.id, false)),
    delete: secretKeyProcedure('saml:write')
      .meta({
        openapi: {
          method: 'DELETE',
          path: '/v1/saml/connections/{id}',
          tags,
          summary: "Delete a SAML connection and its users' links to it (the users stay)",
        },
      })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => deleteSamlConnection(ctx, input.id)),
  }),
});

const signInTags = ['End-user sign-in'];

/** The browser's side of SAML sign-in (ES), mounted under `auth.sso`. */
export const ssoRouter = router({
  start: endUserProcedure
    .meta({
      rateLimited: true,
      openapi: {
        method: 'POST',
        path: '/v1/auth/sso/start',
        tags: signInTags,
        summary: 'Start a SAML sign-in: the IdP URL to send the browser to',
        description:
          'The connection is found by id, or by the email\u2019s domain among enabled connections. After the IdP, ' +
          'the browser comes back to `redirect_uri?code=…` (or `?error=…`); call `/v1/auth/sso/complete` with the code.',
      },
    })
    .input(StartSsoInputSchema)
    .output(StartSsoOutputSchema)
    .mutation(({ ctx, input }) => startSso(ctx, input)),
  complete: endUserProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/auth/sso/complete',
        tags: signInTags,
        summary: 'Finish a SAML sign-in with the code the ACS redirect carried (single use, 60 s)',
      },
    })
    .input(CompleteSsoInputSchema)
    .output(SignInResultSchema)
    .mutation(({ ctx, input }) => completeSso(ctx, input)),
});
