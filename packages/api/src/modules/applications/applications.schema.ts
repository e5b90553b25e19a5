import { z } from 'zod';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { RedirectUrlSchema, storableText, text } from '../../lib/schemas.ts';

/** An origin exactly as a browser sends it: scheme, host and optional port, nothing else. */
export const OriginSchema = text()
  .max(255)
  .refine((value) => {
    try {
      const url = new URL(value);
      return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
    } catch {
      return false;
    }
  }, 'an origin such as https://app.example.com (scheme, host, optional port; no path or trailing slash)');

const DAY = 86_400;

const ConsentDocumentSchema = z.strictObject({
  doc_type: text().regex(/^[a-z][a-z0-9_]{0,63}$/, 'a snake_case document type'),
  url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .check(storableText),
  version: text().min(1).max(64),
});

/** An application-defined OAuth scope (`settings.oauth2.scopes`), offered to third-party apps beside the OpenID ones. */
const OAuth2ScopeSchema = z.strictObject({
  name: text()
    .regex(/^[a-z][a-z0-9_.:-]{0,63}$/, 'a scope name such as read:documents')
    .refine((name) => !['openid', 'profile', 'email', 'offline_access'].includes(name), 'is a built-in scope'),
  description: text().max(300).default(''),
});

/** A colour as `#rrggbb`; either case is accepted and kept lower-case. */
const ColorSchema = text()
  .regex(/^#[0-9a-fA-F]{6}$/, 'a colour as #rrggbb')
  .toLowerCase()
  .meta({ pattern: '^#[0-9a-f]{6}$', example: '#4f46e5' });

/** The application's look on its hosted pages (and in the mail it sends): every field optional. */
const BrandingSchema = z.strictObject({
  display_name: text().trim().min(1).max(100).nullable().default(null).meta({
    description: 'The name shown on the hosted pages (null: the application name)',
  }),
  logo_url: RedirectUrlSchema.nullable().default(null).meta({
    description:
      'An https URL of the logo, or the URL of the logo uploaded with PUT /v1/applications/{id}/branding/logo (http only for development applications)',
  }),
  primary_color: ColorSchema.nullable().default(null),
  theme: z.enum(['light', 'dark', 'auto']).default('auto'),
  support_email: text().trim().max(320).pipe(z.email()).nullable().default(null).meta({
    description: 'The address shown to people who need help signing in',
  }),
});
const BRANDING_DEFAULT = { display_name: null, logo_url: null, primary_color: null, theme: 'auto', support_email: null } as const;

/** Each top-level key of the settings, with its default. PATCH replaces the keys it names and keeps the others. */
const settingsShape = {
  consent_documents: z
    .array(ConsentDocumentSchema)
    .max(20)
    .refine((docs) => new Set(docs.map((d) => d.doc_type)).size === docs.length, 'doc_type must be unique')
    .default([]),
  sign_up: z.enum(['open', 'closed']).default('open'),
  mfa: z.enum(['optional', 'required']).default('optional'),
  session: z
    .strictObject({
      access_token_ttl_s: z.number().int().min(60).max(3600).default(600),
      idle_timeout_s: z
        .number()
        .int()
        .min(300)
        .max(365 * DAY)
        .default(30 * DAY),
      absolute_timeout_s: z
        .number()
        .int()
        .min(300)
        .max(365 * DAY)
        .default(90 * DAY),
    })
    .default({ access_token_ttl_s: 600, idle_timeout_s: 30 * DAY, absolute_timeout_s: 90 * DAY })
    .refine((s) => s.idle_timeout_s >= s.access_token_ttl_s && s.absolute_timeout_s >= s.idle_timeout_s, {
      message: 'access_token_ttl_s ≤ idle_timeout_s ≤ absolute_timeout_s',
    }),
  magic_link: z
    .strictObject({
      ttl_s: z.number().int().min(60).max(600).default(600),
      redirect_url: RedirectUrlSchema.nullable().default(null),
    })
    .default({ ttl_s: 600, redirect_url: null }),
  passkeys: z
    .strictObject({
      rp_id: text().max(253).nullable().default(null),
      rp_name: text().max(200).nullable().default(null),
    })
    .default({ rp_id: null, rp_name: null }),
  rate_limits: z
    .strictObject({
      magic_link_per_email: z.number().int().min(1).max(10_000).default(10),
      magic_link_per_address: z.number().int().min(1).max(100_000).default(100),
      window_s: z.number().int().min(1).max(DAY).default(900),
    })
    .default({ magic_link_per_email: 10, magic_link_per_address: 100, window_s: 900 }),
  /** How long the housekeeping job keeps rows nobody needs after a while (ARCHITECTURE "Retention"). */
  retention: z
    .strictObject({
      events_days: z.number().int().min(1).max(365).default(30),
      messages_days: z.number().int().min(1).max(365).default(30),
      ended_sessions_days: z.number().int().min(1).max(365).default(30),
    })
    .default({ events_days: 30, messages_days: 30, ended_sessions_days: 30 }),
  /**
   * How many days the audit log keeps its entries (CONTRACT §8). Events stay that long as audit entries even when
   * `retention.events_days` is shorter; the event log shows only its own days (ARCHITECTURE "Housekeeping and retention").
   */
  audit_log_retention_days: z.number().int().min(1).max(3650).default(365),
  /** Social sign-in: keep each identity's provider tokens (encrypted) for calls to the provider's API. */
  oauth: z.strictObject({ store_provider_tokens: z.boolean().default(false) }).default({ store_provider_tokens: false }),
  /**
   * The application as an OAuth 2.1 / OpenID Connect provider: its sign-in page for the login and consent interaction
   * (null: the hosted page), its own scopes, the resource servers (RFC 8707) tokens may be issued for, and whether
   * clients may register themselves (RFC 7591, off by default).
   */
  oauth2: z
    .strictObject({
      login_url: RedirectUrlSchema.nullable().default(null),
      scopes: z
        .array(OAuth2ScopeSchema)
        .max(50)
        .refine((scopes) => new Set(scopes.map((s) => s.name)).size === scopes.length, 'scope names must be unique')
        .default([]),
      resources: z.array(RedirectUrlSchema).max(20).default([]),
      dynamic_registration: z.boolean().default(false),
    })
    .default({ login_url: null, scopes: [], resources: [], dynamic_registration: false }),
  /** The look of the application's hosted pages. */
  branding: BrandingSchema.default(BRANDING_DEFAULT),
  /** The first factors the hosted sign-in page offers (social providers and SAML connections: when enabled). */
  sign_in: z
    .strictObject({ magic_link: z.boolean().default(true), passkeys: z.boolean().default(true) })
    .default({ magic_link: true, passkeys: true }),
};

export const ApplicationSettingsSchema = z.strictObject(settingsShape).meta({ id: 'ApplicationSettings' });
export type ApplicationSettings = z.infer<typeof ApplicationSettingsSchema>;
/**
 * Input: any subset of the top-level keys; each named key is validated and filled with its own defaults. (Not
 * `.partial()`: in zod 4 that still applies each field's default, so a PATCH would reset the keys it omits.)
 */
export const ApplicationSettingsPatchSchema = z.strictObject({
  consent_documents: settingsShape.consent_documents.unwrap().optional(),
  sign_up: settingsShape.sign_up.unwrap().optional(),
  mfa: settingsShape.mfa.unwrap().optional(),
  session: settingsShape.session.unwrap().optional(),
  magic_link: settingsShape.magic_link.unwrap().optional(),
  passkeys: settingsShape.passkeys.unwrap().optional(),
  rate_limits: settingsShape.rate_limits.unwrap().optional(),
  retention: settingsShape.retention.unwrap().optional(),
  audit_log_retention_days: settingsShape.audit_log_retention_days.unwrap().optional(),
  oauth: settingsShape.oauth.unwrap().optional(),
  oauth2: settingsShape.oauth2.unwrap().optional(),
  branding: settingsShape.branding.unwrap().optional(),
  sign_in: settingsShape.sign_in.unwrap().optional(),
});
export type ApplicationSettingsPatch = z.infer<typeof ApplicationSettingsPatchSchema>;

export const ENVIRONMENTS = ['development', 'production'] as const;

export const ApplicationSchema = z
  .object({
    id: z.uuid().meta({ description: 'The publishable application id (x-application-id)' }),
    name: text(),
    environment: z.enum(ENVIRONMENTS),
    allowed_origins: z.array(text()),
    reserved: z.boolean().meta({
      description: 'The service\u2019s own application (the operators\u2019 console): it cannot be deleted',
    }),
    settings: ApplicationSettingsSchema,
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'Application' });
export type ApplicationRecord = z.infer<typeof ApplicationSchema>;

export const CreateApplicationInputSchema = z.strictObject({
  name: text().trim().min(1).max(200),
  environment: z.enum(ENVIRONMENTS).default('development'),
  allowed_origins: z.array(OriginSchema).max(50).default([]),
  settings: ApplicationSettingsPatchSchema.default({}),
});

export const UpdateApplicationInputSchema = z.strictObject({
  id: z.uuid(),
  name: text().trim().min(1).max(200).optional(),
  allowed_origins: z.array(OriginSchema).max(50).optional(),
  settings: ApplicationSettingsPatchSchema.optional(),
});

export const ListApplicationsInputSchema = listQuerySchema({});
export const ApplicationPageSchema = pageOf('applications', ApplicationSchema).meta({ id: 'ApplicationPage' });
