import { isIP } from 'node:net';
import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { idempotentWrite } from '../../lib/idempotency.ts';
import { newId } from '../../lib/ids.ts';
import {
  addressClass,
  guardedRequest,
  insecureRemedy,
  isAllowedAddress,
  OutboundBlockedError,
  type OutboundPolicy,
} from '../../lib/ssrf.ts';
import { iso } from '../../lib/time.ts';
import type { Application } from '../applications/application.entity.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import { parseCertificate, parseIdpMetadata, type SpConfig, spMetadataXml } from './saml.protocol.ts';
import type { SamlConnectionRecord } from './saml.schema.ts';
import { type SamlConnection, SamlConnectionEntity } from './saml-connection.entity.ts';

/** Our SP entity id is the connection's metadata URL; both come from configuration, never from the request. */
export const spUrls = (baseUrl: string, id: string) => ({
  metadataUrl: `${baseUrl}/v1/saml/metadata/${id}`,
  acsUrl: `${baseUrl}/v1/saml/acs/${id}`,
});

export function spConfigOf(baseUrl: string, connection: SamlConnection): SpConfig | null {
  if (!connection.idpCertificate) return null;
  const { metadataUrl, acsUrl } = spUrls(baseUrl, connection.id);
  return {
    spEntityId: metadataUrl,
    acsUrl,
    idpEntityId: connection.idpEntityId,
    idpSsoUrl: connection.idpSsoUrl,
    idpCertificate: connection.idpCertificate,
  };
}

export function toSamlConnectionRecord(baseUrl: string, c: SamlConnection): SamlConnectionRecord {
  const { metadataUrl, acsUrl } = spUrls(baseUrl, c.id);
  return {
    id: c.id,
    name: c.name,
    enabled: c.enabled,
    idp_entity_id: c.idpEntityId,
    idp_sso_url: c.idpSsoUrl,
    email_attribute: c.emailAttribute ?? null,
    email_domain: c.emailDomain ?? null,
    name_attribute: c.nameAttribute ?? null,
    allow_idp_initiated: c.allowIdpInitiated,
    organization_id: c.organization ?? null,
    acs_url: acsUrl,
    metadata_url: metadataUrl,
    certificate_expires_at: iso(c.certificateExpiresAt),
    created_at: c.createdAt.toISOString(),
    updated_at: c.updatedAt.toISOString(),
  };
}

const INSECURE_SAML_SETTING = 'GATEHOUSE_ALLOW_INSECURE_SAML';

/** A refused IdP URL: the reason is in the message too, so a plain CLI or log line shows it. */
const refuseUrl = (field: string, reason: string) =>
  new AppError('invalid_url', `The URL is not allowed: ${reason}`, [{ path: field, message: reason }]);

/**
 * The IdP's sign-in URL: https, and not a loopback host, unless GATEHOUSE_ALLOW_INSECURE_SAML (local IdPs in
 * development and tests). `javascript:` and friends never pass the schema.
 */
function checkSsoUrl(ctx: Context, value: string, field = 'idp_sso_url') {
  const url = new URL(value);
  if (ctx.services.allowInsecureSaml) return;
  if (url.protocol !== 'https:') throw refuseUrl(field, `not https${insecureRemedy(INSECURE_SAML_SETTING)}`);
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) {
    throw refuseUrl(field, `a loopback name (localhost)${insecureRemedy(INSECURE_SAML_SETTING)}`);
  }
  if (isIP(host) > 0 && !isAllowedAddress(host)) {
    throw refuseUrl(field, `${addressClass(host)}${insecureRemedy(INSECURE_SAML_SETTING)}`);
  }
}

const certificateFields = (base64: string | undefined | null) => {
  if (!base64) return { idpCertificate: null, certificateExpiresAt: null };
  const parsed = parseCertificate(base64);
  // The schema already refused anything else; metadata certificates were parsed when read.
  if (typeof parsed === 'string') throw new AppError('validation_failed', 'The request does not match the schema');
  return { idpCertificate: base64, certificateExpiresAt: parsed.expiresAt };
};

interface ConnectionFields {
  name: string;
  idp_entity_id: string;
  idp_sso_url: string;
  idp_certificate?: string;
  email_attribute?: string;
  email_domain?: string;
  name_attribute?: string;
  enabled: boolean;
  allow_idp_initiated: boolean;
  organization_id?: string;
}

/** An `organization_id` in a connection's body must name an organization of the application (422 otherwise). */
async function checkOrganization(ctx: TenantContext, organizationId: string | null | undefined) {
  if (!organizationId) return;
  if (await ctx.em.count(OrganizationEntity, { id: organizationId, application: ctx.application.id })) return;
  const message = 'No such organization in this application';
  throw new AppError('validation_failed', message, [{ path: 'organization_id', message }]);
}

export async function createSamlConnection(ctx: TenantContext, input: ConnectionFields) {
  checkSsoUrl(ctx, input.idp_sso_url);
  await checkOrganization(ctx, input.organization_id);
  const application = ctx.application;
  const connection = ctx.em.create(SamlConnectionEntity, {
    id: newId(),
    application: application.id,
    name: input.name,
    enabled: input.enabled,
    idpEntityId: input.idp_entity_id,
    idpSsoUrl: input.idp_sso_url,
    ...certificateFields(input.idp_certificate),
    emailAttribute: input.email_attribute ?? null,
    emailDomain: input.email_domain ?? null,
    nameAttribute: input.name_attribute ?? null,
    allowIdpInitiated: input.allow_idp_initiated,
    organization: input.organization_id ?? null,
  });
  const record = toSamlConnectionRecord(ctx.services.baseUrl, connection);
  recordEvent(ctx.em, application.id, 'saml_connection.created', record);
  await ctx.em.flush();
  return record;
}

const METADATA_MAX_BYTES = 512 * 1024;

/** An IdP's metadata document, fetched through the SSRF guard (SECURITY 8); every refusal is 422 `invalid_url`. */
async function fetchMetadata(url: string, field: string, policy: OutboundPolicy): Promise<string> {
  const refuse = (reason: string) => refuseUrl(field, reason);
  let response: Awaited<ReturnType<typeof guardedRequest>>;
  try {
    response = await guardedRequest(url, {
      method: 'GET',
      headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml', 'user-agent': 'Gatehouse' },
      timeoutMs: 5_000,
      keepBytes: METADATA_MAX_BYTES + 1,
      ...policy,
      insecureSetting: INSECURE_SAML_SETTING,
    });
  } catch (error) {
    throw refuse(error instanceof OutboundBlockedError ? error.message : 'could not be fetched');
  }
  // Redirects are not followed: the next hop was never checked.
  if (response.status >= 300 && response.status < 400) throw refuse('redirects are not followed');
  if (response.status < 200 || response.status >= 300) throw refuse(`answered HTTP ${response.status}`);
  if (response.body.length > METADATA_MAX_BYTES) throw refuse(`the document is larger than ${METADATA_MAX_BYTES} bytes`);
  return response.body.toString('utf8');
}

/**
 * An IdP's metadata (given, or fetched through the SSRF guard), read and checked: its entity id, sign-in URL and
 * signing certificate. Every refusal names the field (`metadata_xml` or `metadata_url`).
 */
export async function readIdpMetadata(ctx: TenantContext, input: { metadata_xml?: string; metadata_url?: string }) {
  const field = input.metadata_url !== undefined ? 'metadata_url' : 'metadata_xml';
  // The callers let exactly one of metadata_xml and metadata_url through.
  const xml =
    input.metadata_url === undefined
      ? (input.metadata_xml ?? '')
      : await fetchMetadata(input.metadata_url, field, {
          allowInsecure: ctx.services.allowInsecureSaml,
          dnsServers: ctx.services.dnsServers,
        });
  const metadata = await parseIdpMetadata(xml);
  if (typeof metadata === 'string') {
    throw new AppError('validation_failed', `The IdP metadata cannot be used: ${metadata}`, [{ path: field, message: metadata }]);
  }
  checkSsoUrl(ctx, metadata.ssoUrl, field);
  return metadata;
}

/** Reads an IdP's metadata (given, or fetched through the SSRF guard) and creates the connection from it. */
export async function createSamlConnectionFromMetadata(
  ctx: TenantContext,
  input: Omit<ConnectionFields, 'idp_entity_id' | 'idp_sso_url' | 'idp_certificate' | 'name'> & {
    name?: string;
    metadata_xml?: string;
    metadata_url?: string;
  },
) {
  const metadata = await readIdpMetadata(ctx, input);
  const { metadata_xml: _xml, metadata_url: _url, ...rest } = input;
  // The metadata was fetched outside any transaction (meta `idempotent: 'own-write'`): the write and the
  // Idempotency-Key's answer commit together from here.
  return idempotentWrite(ctx, (em) =>
    createSamlConnection(
      { ...ctx, em },
      {
        ...rest,
        name: input.name ?? metadata.entityId.slice(0, 200),
        idp_entity_id: metadata.entityId.slice(0, 1024),
        idp_sso_url: metadata.ssoUrl,
        idp_certificate: metadata.certificates[0],
      },
    ),
  );
}

async function findConnection(ctx: TenantContext, id: string): Promise<SamlConnection> {
  const connection = await ctx.em.findOne(SamlConnectionEntity, { id, application: ctx.application.id });
  if (!connection) throw notFound('SAML connection');
  return connection;
}

export async function listSamlConnections(ctx: TenantContext) {
  const rows = await ctx.em.find(
    SamlConnectionEntity,
    { application: ctx.application.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return rows.map((c) => toSamlConnectionRecord(ctx.services.baseUrl, c));
}

export async function getSamlConnection(ctx: TenantContext, id: string) {
  return toSamlConnectionRecord(ctx.services.baseUrl, await findConnection(ctx, id));
}

/** S2: the seed's required fields replace the stored ones; an optional field absent stays, `null` clears it. */
export async function updateSamlConnection(
  ctx: TenantContext,
  input: {
    id: string;
    idp_certificate: string;
    idp_entity_id: string;
    idp_sso_url: string;
    name: string;
    email_attribute?: string | null;
    email_domain?: string | null;
    enabled?: boolean;
    name_attribute?: string | null;
    allow_idp_initiated?: boolean;
    organization_id?: string | null;
  },
) {
  const connection = await findConnection(ctx, input.id);
  checkSsoUrl(ctx, input.idp_sso_url);
  await checkOrganization(ctx, input.organization_id);
  Object.assign(connection, {
    name: input.name,
    idpEntityId: input.idp_entity_id,
    idpSsoUrl: input.idp_sso_url,
    ...certificateFields(input.idp_certificate),
    ...(input.email_attribute !== undefined ? { emailAttribute: input.email_attribute } : {}),
    ...(input.email_domain !== undefined ? { emailDomain: input.email_domain } : {}),
    ...(input.name_attribute !== undefined ? { nameAttribute: input.name_attribute } : {}),
    ...(input.enabled !== undefined ? { enabled: input.enabled } : {}),
    ...(input.allow_idp_initiated !== undefined ? { allowIdpInitiated: input.allow_idp_initiated } : {}),
    ...(input.organization_id !== undefined ? { organization: input.organization_id } : {}),
    updatedAt: new Date(),
  });
  return saved(ctx, connection);
}

/** Enable or disable without resending the certificate (the CLI's enable/disable; the record never carries it). */
export async function setSamlConnectionEnabled(ctx: TenantContext, id: string, enabled: boolean) {
  const connection = await findConnection(ctx, id);
  connection.enabled = enabled;
  connection.updatedAt = new Date();
  return saved(ctx, connection);
}

async function saved(ctx: TenantContext, connection: SamlConnection) {
  const record = toSamlConnectionRecord(ctx.services.baseUrl, connection);
  recordEvent(ctx.em, ctx.application.id, 'saml_connection.updated', record);
  await ctx.em.flush();
  return record;
}

/** Deletes the connection, its pending requests and codes, and the users' links to it (the users stay). */
export async function deleteSamlConnection(ctx: TenantContext, id: string) {
  const connection = await findConnection(ctx, id);
  const record = toSamlConnectionRecord(ctx.services.baseUrl, connection);
  await ctx.em.transactional(async (em) => {
    await unlinkIdentities(em, ctx.application, connection.id);
    await em.execute('delete from saml_connections where id = ? and application_id = ?', [connection.id, ctx.application.id]);
    recordEvent(em, ctx.application.id, 'saml_connection.deleted', record);
    await em.flush();
  });
  return { id, deleted: true as const };
}

/** SAML identities are keyed `<connection id>:<NameID>` (a uuid holds no LIKE wildcard). */
export const samlSubject = (connectionId: string, nameId: string) => `${connectionId}:${nameId}`;

async function unlinkIdentities(em: EntityManager, application: Application, connectionId: string) {
  await em.execute(`delete from identities where application_id = ? and kind = 'saml' and subject like ?`, [
    application.id,
    `${connectionId}:%`,
  ]);
}

/** Public: our SP metadata for a connection (the IdP administrator's input). Any application's id; unknown → 404. */
export async function samlMetadata(ctx: Context, connectionId: string): Promise<string> {
  const connection = await ctx.em.findOne(SamlConnectionEntity, { id: connectionId });
  if (!connection) throw notFound('SAML connection');
  const { metadataUrl, acsUrl } = spUrls(ctx.services.baseUrl, connection.id);
  return spMetadataXml(metadataUrl, acsUrl);
}
