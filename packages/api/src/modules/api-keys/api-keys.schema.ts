import { z } from 'zod';
import { text } from '../../lib/schemas.ts';
import { SCOPES } from '../../lib/scopes.ts';

export const ApiKeySchema = z
  .object({
    id: z.uuid(),
    name: text(),
    scopes: z.array(text()),
    prefix: text().meta({ description: 'The first 12 characters of the secret, for recognising a key' }),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
    revoked_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'ApiKey' });
export type ApiKeyRecord = z.infer<typeof ApiKeySchema>;

export const ApiKeyWithSecretSchema = ApiKeySchema.extend({
  secret: text().meta({ description: 'The secret key. Shown once, never again.' }),
}).meta({ id: 'ApiKeyWithSecret' });

export const CreateApiKeyInputSchema = z.strictObject({
  name: text().trim().min(1).max(200),
  // Checked against the catalogue in the service, so an unknown scope is 422 `unknown_scope`, not a schema error.
  scopes: z.array(text().max(64)).min(1).max(SCOPES.length),
});

/** The `data` of `api_key.created` (never the secret). */
export const ApiKeyCreatedEventSchema = z.object({ id: z.uuid(), name: text(), scopes: z.array(text()) });
/** The `data` of `api_key.revoked`. */
export const ApiKeyRevokedEventSchema = z.object({ id: z.uuid(), name: text() });
