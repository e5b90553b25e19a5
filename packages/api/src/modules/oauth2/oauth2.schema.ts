import { z } from 'zod';
import { RedirectUrlSchema } from '../../lib/schemas.ts';

const LOOPBACK = new Set(['127.0.0.1', '[::1]']);

/**
 * A redirect URI as RFC 8252 and RFC 9700 allow it: `https`; `http` only on a loopback IP literal (native apps);
 * or a private-use scheme in reverse-domain form (`com.example.app:/callback`). Never a fragment or credentials.
 * Matched exactly at the authorization endpoint (a loopback URI's port may vary, RFC 8252 §7.3).
 */
export function redirectUriAllowed(value: string): boolean {
  if (value.length > 2048) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  if (url.hash || value.includes('#') || url.username || url.password) return false;
  if (url.protocol === 'https:') return url.hostname.length > 0;
  if (url.protocol === 'http:') return LOOPBACK.has(url.hostname);
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol);
}

const RedirectUriSchema = z
  .string()
  .refine(redirectUriAllowed, {
    message: 'https, http on 127.0.0.1 or [::1] (native apps), or a reverse-domain private-use scheme; no fragment',
    params: { code: 'invalid_url' },
  })
  .meta({ format: 'uri', maxLength: 2048 });

const ScopeNameSchema = z.string().min(1).max(64);

export const OAuth2ClientSchema = z
  .object({
    id: z.uuid().meta({ description: 'The client_id' }),
    name: z.string(),
    type: z.enum(['public', 'confidential']),
    redirect_uris: z.array(z.string()),
    scopes: z.array(z.string()),
    logo_url: z.string().nullable(),
    dynamic: z.boolean().meta({ description: 'Registered by the client itself (RFC 7591)' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'OAuth2Client' });
export type OAuth2ClientRecord = z.infer<typeof OAuth2ClientSchema>;

export const OAuth2ClientWithSecretSchema = OAuth2ClientSchema.extend({
  client_secret: z.string().nullable().meta({ description: 'Shown once, at creation and on rotation; null for a public client' }),
}).meta({ id: 'OAuth2ClientWithSecret' });

export const CreateOAuth2ClientInputSchema = z.strictObject({
  name: z.string().trim().min(1).max(200),
  redirect_uris: z.array(RedirectUriSchema).min(1).max(20),
  type: z.enum(['public', 'confidential']),
  scopes: z.array(ScopeNameSchema).max(60).default(['openid']),
  logo_url: RedirectUrlSchema.nullable().optional(),
});

export const UpdateOAuth2ClientInputSchema = z.strictObject({
  id: z.uuid(),
  name: z.string().trim().min(1).max(200).optional(),
  redirect_uris: z.array(RedirectUriSchema).min(1).max(20).optional(),
  scopes: z.array(ScopeNameSchema).max(60).optional(),
  logo_url: RedirectUrlSchema.nullable().optional(),
});

/** S6: what the user authorized a client to do. */
export const GrantSchema = z
  .object({
    id: z.string(),
    client_id: z.uuid(),
    scopes: z.array(z.string()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Grant' });
export type GrantRecord = z.infer<typeof GrantSchema>;

export const GrantIdParamSchema = z.strictObject({ id: z.string().min(1).max(64) });
export const UserGrantParamSchema = z.strictObject({ id: z.uuid(), grant_id: z.string().min(1).max(64) });

export const InteractionParamSchema = z.strictObject({ uid: z.string().min(1).max(128) });

export const InteractionSchema = z
  .object({
    uid: z.string(),
    client: z.object({ id: z.string(), name: z.string(), logo_url: z.string().nullable() }),
    scopes: z.array(z.object({ name: z.string(), description: z.string() })).meta({ description: 'The requested scopes' }),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'OAuth2Interaction' });

export const CompleteInteractionInputSchema = z.strictObject({
  uid: z.string().min(1).max(128),
  approved_scopes: z.array(ScopeNameSchema).max(60),
});

export const InteractionOutcomeSchema = z
  .object({ redirect_to: z.string().meta({ description: 'Send the browser here to finish the authorization' }) })
  .meta({ id: 'OAuth2InteractionOutcome' });

/** The `data` of `oauth2_grant.created`. */
export const GrantCreatedEventSchema = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  client_id: z.string(),
  scopes: z.array(z.string()),
});
/** The `data` of `oauth2_grant.revoked`: why (`user`, `support`, `ban`, `deletion`, `token_reuse`, …). */
export const GrantRevokedEventSchema = z.object({ id: z.uuid(), user_id: z.uuid(), client_id: z.string(), reason: z.string() });
