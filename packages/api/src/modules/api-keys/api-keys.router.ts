import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { ApiKeySchema, ApiKeyWithSecretSchema, CreateApiKeyInputSchema } from './api-keys.schema.ts';
import { createApiKey, listApiKeys, revokeApiKey, secretKeyProcedure } from './api-keys.service.ts';

const tags = ['API keys'];

export const apiKeysRouter = router({
  create: secretKeyProcedure('api_keys:write')
    .meta({
      idempotent: true,
      successStatus: 201,
      openapi: { method: 'POST', path: '/v1/api-keys', tags, summary: 'Create a secret API key' },
    })
    .input(CreateApiKeyInputSchema)
    .output(ApiKeyWithSecretSchema)
    .mutation(({ ctx, input }) => createApiKey(ctx, input)),
  list: secretKeyProcedure('api_keys:read')
    .meta({ openapi: { method: 'GET', path: '/v1/api-keys', tags, summary: 'List secret API keys' } })
    .input(z.strictObject({}).optional())
    .output(z.array(ApiKeySchema))
    .query(({ ctx }) => listApiKeys(ctx)),
  revoke: secretKeyProcedure('api_keys:write')
    .meta({ openapi: { method: 'DELETE', path: '/v1/api-keys/{id}', tags, summary: 'Revoke a secret API key (immediately)' } })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => revokeApiKey(ctx, input.id)),
});
