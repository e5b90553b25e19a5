import { z } from 'zod';
import { RedirectUrlSchema, text } from '../../lib/schemas.ts';
import { HostIdSchema } from '../sign-in/sign-in.schema.ts';
import { EmailSchema } from '../users/users.schema.ts';
import { parseCertificate } from './saml.protocol.ts';

/** base64 DER X.509 (CONTRACT §6: anything else is 422 `validation_failed`). */
const IdpCertificateSchema = text()
  .max(65_536)
  .superRefine((value, ctx) => {
    const parsed = parseCertificate(value);
    if (typeof parsed === 'string') ctx.addIssue({ code: 'custom', message: parsed });
  })
  .meta({ description: 'The IdP signing certificate: base64 of its DER bytes (not PEM). Never returned.' });

/** Where the browser is sent with the AuthnRequest: http(s) here; https is enforced by the service (insecure flag). */
const SsoUrlSchema = text()
  .max(2048)
  .refine(
    (value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password;
      } catch {
        return false;
      }
    },
    { message: 'an absolute https URL', params: { code: 'invalid_url' } },
  )
  .meta({
    format: 'uri',
    description: "The IdP's SingleSignOnService URL (HTTP-Redirect binding); https",
    example: 'https://idp.acme.com/saml/sso',
  });

const EntityIdSchema = text().trim().min(1).max(1024).meta({ example: 'https://idp.acme.com/saml/metadata' });
const NameSchema = text().trim().min(1).max(200);
const AttributeSchema = text().trim().min(1).max(256);
const EmailDomainSchema = text()
  .trim()
  .toLowerCase()
  .max(253)
  .regex(/^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/, 'a domain name such as example.com')
  .meta({
    description: "Emails must be in this domain; an email's domain finds its connection at sso/start",
    example: 'acme.com',
  });

export const SamlConnectionSchema = z
  .object({
    id: z.uuid(),
    name: text(),
    enabled: z.boolean(),
    idp_entity_id: text(),
    idp_sso_url: text(),
    email_attribute: text().nullable(),
    email_domain: text().nullable(),
    name_attribute: text().nullable(),
    allow_idp_initiated: z.boolean(),
    organization_id: z
      .uuid()
      .nullable()
      .meta({ description: 'The organization whose IdP this is; null for one of the whole application' }),
    acs_url: text().meta({ description: 'Our Assertion Consumer Service for this connection (give it to the IdP)' }),
    metadata_url: text().meta({ description: 'Our SP metadata for this connection; also our SP entity id' }),
    certificate_expires_at: z.iso
      .datetime()
      .nullable()
      .meta({ description: 'When the IdP certificate expires; null without one (then every sign-in is refused)' }),
    created_at: z.iso.datetime(),
    updated_at: z.iso.datetime(),
  })
  .meta({ id: 'SamlConnection' });
export type SamlConnectionRecord = z.infer<typeof SamlConnectionSchema>;

export const CreateSamlConnectionInputSchema = z.strictObject({
  name: NameSchema,
  idp_entity_id: EntityIdSchema,
  idp_sso_url: SsoUrlSchema,
  idp_certificate: IdpCertificateSchema.optional(),
  email_attribute: AttributeSchema.optional(),
  email_domain: EmailDomainSchema.optional(),
  name_attribute: AttributeSchema.optional(),
  enabled: z.boolean().default(true),
  allow_idp_initiated: z.boolean().default(false),
  organization_id: z.uuid().optional(),
});

/** S2, the seed's body; `allow_idp_initiated` is our optional addition; a `null` clears an optional field. */
export const UpdateSamlConnectionInputSchema = z.strictObject({
  id: z.uuid(),
  idp_certificate: IdpCertificateSchema,
  idp_entity_id: EntityIdSchema,
  idp_sso_url: SsoUrlSchema,
  name: NameSchema,
  email_attribute: AttributeSchema.nullable().optional(),
  email_domain: EmailDomainSchema.nullable().optional(),
  enabled: z.boolean().optional(),
  name_attribute: AttributeSchema.nullable().optional(),
  allow_idp_initiated: z.boolean().optional(),
  organization_id: z.uuid().nullable().optional(),
});

export const CreateFromMetadataInputSchema = z
  .strictObject({
    metadata_xml: text()
      .min(1)
      .max(512 * 1024)
      .optional()
      .meta({ description: "The IdP's EntityDescriptor XML" }),
    metadata_url: text().max(2048).optional().meta({ format: 'uri', description: 'Fetched once, https only' }),
    name: NameSchema.optional().meta({ description: "Defaults to the IdP's entity id" }),
    email_attribute: AttributeSchema.optional(),
    email_domain: EmailDomainSchema.optional(),
    name_attribute: AttributeSchema.optional(),
    enabled: z.boolean().default(true),
    allow_idp_initiated: z.boolean().default(false),
    organization_id: z.uuid().optional(),
  })
  .superRefine((value, ctx) => {
    if ((value.metadata_xml === undefined) === (value.metadata_url === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['metadata_xml'], message: 'send exactly one of metadata_xml and metadata_url' });
    }
  });

export const ConnectionIdParamSchema = z.strictObject({ connection_id: z.uuid() });

export const StartSsoInputSchema = z
  .strictObject({
    email: EmailSchema.optional().meta({ description: "Finds the connection by the email's domain" }),
    connection_id: z.uuid().optional(),
    redirect_uri: RedirectUrlSchema.meta({
      description: 'Where the ACS sends the browser back (`?code=` or `?error=`); its origin must be allowed',
    }),
    host_id: HostIdSchema.optional(),
  })
  .superRefine((value, ctx) => {
    if ((value.email === undefined) === (value.connection_id === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['email'], message: 'send exactly one of email and connection_id' });
    }
  });
export const StartSsoOutputSchema = z
  .object({ redirect_url: text().meta({ description: "The IdP's sign-in page, carrying our AuthnRequest" }) })
  .meta({ id: 'SsoStarted' });
export const CompleteSsoInputSchema = z.strictObject({
  code: text().min(1).max(200),
  redirect_uri: RedirectUrlSchema.optional().meta({
    description:
      'When sent, the code must have been issued for exactly this `redirect_uri` (as given to sso/start): a page that ' +
      'puts a per-browser value in its redirect_uri binds the code to the browser that started',
  }),
});
