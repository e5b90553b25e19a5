import { z } from 'zod';
import { RedirectUrlSchema, text } from '../../lib/schemas.ts';
import { HostIdSchema } from '../sign-in/sign-in.schema.ts';
import { OAUTH_PROVIDERS } from './oauth.providers.ts';

export const OAuthProviderNameSchema = z.enum(OAUTH_PROVIDERS).meta({
  description:
    'A built-in provider (google, github, microsoft, apple, gitlab, discord, slack, linkedin), or `oidc` (any OpenID Connect issuer); anything else is 422',
});

/** S3's OAuth provider setting; `issuer` is ours (the generic `oidc` provider; null for the others). */
export const OAuthProviderSettingSchema = z
  .object({
    provider: OAuthProviderNameSchema,
    client_id: text().nullable(),
    enabled: z.boolean(),
    has_secret: z.boolean().meta({ description: 'Whether a client secret is stored; the secret itself is never returned' }),
    scopes: z.array(text()),
    use_shared_dev_credentials: z.boolean(),
    issuer: text().nullable().meta({ description: 'The `oidc` provider: the issuer it discovers; null otherwise' }),
    updated_at: z.iso.datetime().nullable().meta({ description: 'Null while the provider was never configured' }),
  })
  .meta({ id: 'OAuthProviderSetting' });
export type OAuthProviderSetting = z.infer<typeof OAuthProviderSettingSchema>;

export const ProviderParamsSchema = z.strictObject({ id: z.uuid(), provider: OAuthProviderNameSchema });

const ScopeSchema = text().regex(/^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/, 'an OAuth scope token (RFC 6749 §3.3)');

/** PUT: `enabled` is required; every other field omitted keeps its stored value (the secret is never sent back). */
export const PutOAuthProviderInputSchema = ProviderParamsSchema.extend({
  client_id: text().trim().min(1).max(512).optional(),
  client_secret: text().min(1).max(8192).optional().meta({
    description: 'Stored encrypted, never returned. Apple: `TEAM_ID:KEY_ID:` followed by the .p8 private key (PEM).',
  }),
  enabled: z.boolean(),
  scopes: z.array(ScopeSchema).min(1).max(30).optional().meta({ description: "Default: the provider's sign-in scopes" }),
  use_shared_dev_credentials: z
    .boolean()
    .optional()
    .meta({ description: "Sign in with the operator's shared client (development applications only)" }),
  issuer: text().max(2048).optional().meta({ format: 'uri', description: '`oidc` only: the issuer URL (https)' }),
});

export const StartOAuthInputSchema = z.strictObject({
  provider: OAuthProviderNameSchema,
  redirect_uri: RedirectUrlSchema.meta({
    description:
      'Where the browser comes back with `?code=…&state=…` (or `?error=…`); its origin must be one of the allowed origins',
  }),
});
export const StartOAuthSignInInputSchema = StartOAuthInputSchema.extend({ host_id: HostIdSchema.optional() });
export const StartOAuthOutputSchema = z
  .object({ authorization_url: text().meta({ description: "The provider's consent page: send the browser there" }) })
  .meta({ id: 'OAuthStarted' });

export const OAuthCallbackInputSchema = z
  .strictObject({
    provider: OAuthProviderNameSchema,
    code: text().min(1).max(2048).optional(),
    state: text().min(1).max(200),
    error: text()
      .max(200)
      .optional()
      .meta({ description: 'The `error` the provider put on the redirect instead of a code (e.g. `access_denied`)' }),
  })
  .superRefine((value, ctx) => {
    if ((value.code === undefined) === (value.error === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['code'], message: 'send the code (or the error) the redirect carried' });
    }
  });

export const IdentitySchema = z
  .object({
    id: z.uuid(),
    kind: z.enum(['oauth', 'saml', 'passkey']),
    provider: text().nullable().meta({ description: 'The OAuth provider (kind `oauth`); null otherwise' }),
    name: text(),
    created_at: z.iso.datetime(),
    last_used_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Identity' });
export type IdentityRecord = z.infer<typeof IdentitySchema>;

export const UserIdentityParamsSchema = z.strictObject({ id: z.uuid(), identity_id: z.uuid() });

/** The `data` of `user.identity_linked` and `user.identity_unlinked`. */
export const IdentityEventSchema = z.object({ user_id: z.uuid(), identity: IdentitySchema });
