import { AppError, notFound } from '../../errors.ts';
import type { TenantContext } from '../applications/contexts.ts';
import type { SamlConnectionRecord } from '../saml/saml.schema.ts';
import {
  createSamlConnection,
  listSamlConnections,
  readIdpMetadata,
  setSamlConnectionEnabled,
  updateSamlConnection,
} from '../saml/saml.service.ts';
import { collectSsoTest, type SsoTestResult, startSsoTest } from '../saml/sso.service.ts';
import type { PortalSession } from './portal.service.ts';

/**
 * The `sso` intent's operations, for a portal session: every one is bound to the session's organization. A connection
 * of another organization (or of none) is 404, as another application's is.
 */
export interface PortalContext extends TenantContext {
  portal: PortalSession;
}

function requireIntent(ctx: PortalContext) {
  // The pages route by intent already; the service refuses too, so no page can forget.
  if (ctx.portal.intent !== 'sso' || ctx.portal.applicationId !== ctx.application.id) throw notFound('Page');
}

export async function portalSsoConnections(ctx: PortalContext): Promise<SamlConnectionRecord[]> {
  requireIntent(ctx);
  return (await listSamlConnections(ctx)).filter((c) => c.organization_id === ctx.portal.organizationId);
}

async function ownConnection(ctx: PortalContext, id: string): Promise<SamlConnectionRecord> {
  const connection = (await portalSsoConnections(ctx)).find((c) => c.id === id);
  if (!connection) throw notFound('SAML connection');
  return connection;
}

export const portalSsoConnection = ownConnection;

/** The IdPs the portal has instructions for. */
export const PORTAL_IDPS = ['okta', 'entra', 'google', 'generic'] as const;
export type PortalIdp = (typeof PORTAL_IDPS)[number];
const IDP_NAMES: Record<PortalIdp, string> = {
  okta: 'Okta',
  entra: 'Microsoft Entra ID',
  google: 'Google Workspace',
  generic: 'SAML',
};

/** Placeholders of a draft: the IdP is not known yet, and without a certificate the connection refuses everything. */
const DRAFT_ENTITY_ID = 'urn:gatehouse:portal:draft';
const DRAFT_SSO_URL = 'https://idp.invalid/saml';

/**
 * A draft connection of the session's organization, disabled and without a certificate (so it refuses every
 * response): its ACS URL, entity id and metadata URL are what the IdP's administrator needs before the IdP can give
 * its own metadata. No `email_domain`: which addresses an IdP may vouch for is decided by the organization's verified
 * domains, never by what a portal user types (else one customer could claim another's domain).
 */
export async function portalSsoCreateDraft(ctx: PortalContext, idp: PortalIdp): Promise<SamlConnectionRecord> {
  requireIntent(ctx);
  return createSamlConnection(ctx, {
    name: IDP_NAMES[idp],
    idp_entity_id: DRAFT_ENTITY_ID,
    idp_sso_url: DRAFT_SSO_URL,
    enabled: false,
    allow_idp_initiated: false,
    organization_id: ctx.portal.organizationId,
  });
}

/** Whether a connection still waits for its IdP's metadata. */
export const isDraft = (connection: SamlConnectionRecord) =>
  connection.idp_entity_id === DRAFT_ENTITY_ID || connection.certificate_expires_at === null;

/**
 * The IdP's metadata (the uploaded file's XML, or a URL fetched through the SSRF guard) configures a connection of
 * the session's organization: entity id, sign-in URL, certificate. The connection keeps its state (a draft stays
 * disabled until tested and enabled).
 */
export async function portalSsoConfigure(
  ctx: PortalContext,
  id: string,
  input: { metadata_xml?: string; metadata_url?: string },
): Promise<SamlConnectionRecord> {
  const connection = await ownConnection(ctx, id);
  if ((input.metadata_xml === undefined) === (input.metadata_url === undefined)) {
    throw new AppError('validation_failed', 'Send exactly one of the metadata file and its URL', [
      { path: 'metadata_xml', message: 'send exactly one of metadata_xml and metadata_url' },
    ]);
  }
  const metadata = await readIdpMetadata(ctx, input);
  const certificate = metadata.certificates[0];
  if (!certificate) throw new AppError('validation_failed', 'The IdP metadata has no signing certificate');
  return updateSamlConnection(ctx, {
    id: connection.id,
    name: connection.name,
    idp_entity_id: metadata.entityId.slice(0, 1024),
    idp_sso_url: metadata.ssoUrl,
    idp_certificate: certificate,
  });
}

export async function portalSsoSetEnabled(ctx: PortalContext, id: string, enabled: boolean) {
  await ownConnection(ctx, id);
  return setSamlConnectionEnabled(ctx, id, enabled);
}

/** Starts the connection test: the IdP's URL, the answer coming back to `redirectUri` (the portal's own page). */
export async function portalSsoStartTest(ctx: PortalContext, id: string, redirectUri: string) {
  await ownConnection(ctx, id);
  return startSsoTest(ctx, id, redirectUri);
}

/** Collects a test's result (its code spent once) — only for a connection of the session's organization. */
export async function portalSsoCollectTest(ctx: PortalContext, code: string, redirectUri: string): Promise<SsoTestResult> {
  requireIntent(ctx);
  const result = await collectSsoTest(ctx, { code, redirect_uri: redirectUri });
  await ownConnection(ctx, result.connection_id);
  return result;
}
