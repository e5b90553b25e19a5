import { z } from 'zod';

export const SCOPES = [
  '*',
  'api_keys:read',
  'api_keys:write',
  'users:read',
  'users:write',
  'organizations:read',
  'organizations:write',
  'saml:read',
  'saml:write',
  'settings:read',
  'settings:write',
  'webhooks:read',
  'webhooks:write',
  'authz:read',
  'authz:write',
  'billing:read',
  'billing:write',
  'access_rules:read',
  'access_rules:write',
  'stats:read',
] as const;

export const ApiKeySchema = z
  .object({
    id: z.uuid(),
    name: z.string(),
    scopes: z.array(z.string()),
    prefix: z.string().meta({ description: 'The first 12 characters of the secret, for recognising a key' }),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
    revoked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyRecord = z.infer<typeof ApiKeySchema>;

export const ApiKeyWithSecretSchema = ApiKeySchema.extend({
  secret: z.string().meta({ description: 'The secret key. Shown once, never again.' }),
}).meta({ id: 'ApiKeyWithSecret' });

export const CreateApiKeyInputSchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  // Checked against the catalogue in the service, so an unknown scope is 422 `unknown_scope`, not a schema error.
  scopes: z.array(z.string().max(64)).min(1).max(SCOPES.length),
});
