import { z } from 'zod';
import { RedirectUrlSchema, text } from '../../lib/schemas.ts';

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

const RedirectUriSchema = text()
  .refine(redirectUriAllowed, {
    message: 'https, http on 127.0.0.1 or [::1] (native apps), or a reverse-domain private-use scheme; no fragment',
    params: { code: 'invalid_url' },
  })
  .meta({ format: 'uri', maxLength: 2048 });

const ScopeNameSchema = text().min(1).max(64);

export const OAuth2ClientSchema = z
  .object({
    id: z.uuid().meta({ description: 'The client_id' }),
    name: text(),
    type: z.enum(['public', 'confidential']),
    redirect_uris: z.array(text()),
    post_logout_redirect_uris: z
      .array(text())
      .meta({ description: 'Where RP-initiated logout may send the browser back (exact match)' }),
    scopes: z.array(text()),
    logo_url: text().nullable(),
    dynamic: z.boolean().meta({ description: 'Registered by the client itself (RFC 7591)' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'OAuth2Client' });
export type OAuth2ClientRecord = z.infer<typeof OAuth2ClientSchema>;

export const OAuth2ClientWithSecretSchema = OAuth2ClientSchema.extend({
  client_secret: text().nullable().meta({ description: 'Shown once, at creation and on rotation; null for a public client' }),
}).meta({ id: 'OAuth2ClientWithSecret' });

export const CreateOAuth2ClientInputSchema = z.strictObject({
  name: text().trim().min(1).max(200),
  redirect_uris: z.array(RedirectUriSchema).min(1).max(20),
  post_logout_redirect_uris: z.array(RedirectUriSchema).max(20).default([]),
  type: z.enum(['public', 'confidential']),
  scopes: z.array(ScopeNameSchema).max(60).default(['openid']),
  logo_url: RedirectUrlSchema.nullable().optional(),
});

export const UpdateOAuth2ClientInputSchema = z.strictObject({
  id: z.uuid(),
  name: text().trim().min(1).max(200).optional(),
  redirect_uris: z.array(RedirectUriSchema).min(1).max(20).optional(),
  post_logout_redirect_uris: z.array(RedirectUriSchema).max(20).optional(),
  scopes: z.array(ScopeNameSchema).max(60).optional(),
  logo_url: RedirectUrlSchema.nullable().optional(),
});

/** S6: what the user authorized a client to do. */
export const GrantSchema = z
  .object({
    id: text(),
    client_id: z.uuid(),
    scopes: z.array(text()),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Grant' });
export type GrantRecord = z.infer<typeof GrantSchema>;

/** The ids the OAuth 2.0 provider makes for grants and interactions: nanoid's URL-safe alphabet. */
const providerId = (max: number) =>
  text()
    .min(1)
    .max(max)
    .regex(/^[A-Za-z0-9_-]+$/, 'URL-safe characters only');

export const GrantIdParamSchema = z.strictObject({ id: providerId(64) });
export const UserGrantParamSchema = z.strictObject({ id: z.uuid(), grant_id: providerId(64) });

export const InteractionParamSchema = z.strictObject({ uid: providerId(128) });

export const InteractionSchema = z
  .object({
    uid: text(),
    client: z.object({ id: text(), name: text(), logo_url: text().nullable() }),
    scopes: z.array(z.object({ name: text(), description: text() })).meta({ description: 'The requested scopes' }),
    expires_at: z.iso.datetime(),
  })
  .meta({ id: 'OAuth2Interaction' });

export const CompleteInteractionInputSchema = z.strictObject({
  uid: text().min(1).max(128),
  approved_scopes: z.array(ScopeNameSchema).max(60),
});

export const InteractionOutcomeSchema = z
  .object({ redirect_to: text().meta({ description: 'Send the browser here to finish the authorization' }) })
  .meta({ id: 'OAuth2InteractionOutcome' });

/** The `data` of `oauth2_grant.created`. */
export const GrantCreatedEventSchema = z.object({
  id: z.uuid(),
  user_id: z.uuid(),
  client_id: text(),
  scopes: z.array(text()),
});
/** The `data` of `oauth2_grant.revoked`: why (`user`, `support`, `ban`, `deletion`, `token_reuse`, …). */
export const GrantRevokedEventSchema = z.object({ id: z.uuid(), user_id: z.uuid(), client_id: text(), reason: text() });
