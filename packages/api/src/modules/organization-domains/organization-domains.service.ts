import { domainToASCII } from 'node:url';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, notFound } from '../../errors.ts';
import { randomBase62 } from '../../lib/crypto.ts';
import { newId } from '../../lib/ids.ts';
import type { Hooks } from '../../lib/modules.ts';
import type { Application } from '../applications/application.entity.ts';
import type { TenantContext } from '../applications/contexts.ts';
import type { VerifiedDomainCheck } from '../directories/directories.hooks.ts';
import { canonicalDomain } from '../domains/domain-name.ts';
import { challengeName, challengeValue, lookUpChallenge } from '../domains/domains.service.ts';
import { recordEvent } from '../events/events.service.ts';
import { OrganizationEntity } from '../organizations/organization.entity.ts';
import { insertMembership } from '../organizations/organizations.service.ts';
import { type DomainOwnerSource, type SignInCheck, type SignInCompletion, ssoRequired } from '../sign-in/sign-in.service.ts';
import type { User } from '../users/user.entity.ts';
import { type OrganizationDomain, OrganizationDomainEntity } from './organization-domain.entity.ts';
import type { OrganizationDomainRecord } from './organization-domains.schema.ts';

/** A claim still unverified this long after it was made is `failed` at its next check (as custom domains). */
const FAIL_AFTER_MS = 7 * 24 * 3600_000;

const claimed = () => new AppError('domain_already_claimed', 'This domain is already claimed');

const toRecord = (d: OrganizationDomain): OrganizationDomainRecord => ({
  id: d.id,
  organization_id: d.organization,
  domain: d.domain,
  // the entity types these columns as strings; only the schema's values are ever written to them.
  status: d.status as OrganizationDomainRecord['status'],
  verification: { type: 'TXT', name: challengeName(d.domain), value: challengeValue(d.verificationToken) },
  join_policy: d.joinPolicy as OrganizationDomainRecord['join_policy'], // a string column too
  sso_policy: d.ssoPolicy as OrganizationDomainRecord['sso_policy'], // a string column too
  verified_at: d.verifiedAt ? d.verifiedAt.toISOString() : null,
  created_at: d.createdAt.toISOString(),
});

async function findOrganization(ctx: TenantContext, id: string) {
  const org = await ctx.em.findOne(OrganizationEntity, { id, application: ctx.application.id });
  if (!org) throw notFound('Organization');
  return org;
}

async function findDomain(ctx: TenantContext, input: { id: string; domain_id: string }): Promise<OrganizationDomain> {
  const org = await findOrganization(ctx, input.id);
  const domain = await ctx.em.findOne(OrganizationDomainEntity, {
    id: input.domain_id,
    organization: org.id,
    application: ctx.application.id,
  });
  if (!domain) throw notFound('Organization domain');
  return domain;
}

/** Whether another organization of the application holds `domain` verified (never which one). */
const verifiedElsewhere = async (em: EntityManager, applicationId: string, organizationId: string, domain: string) =>
  (await em.count(OrganizationDomainEntity, {
    application: applicationId,
    domain,
    status: 'verified',
    organization: { $ne: organizationId },
  })) > 0;

/**
 * A claim, pending verification, with the TXT record to publish. Several organizations may claim one domain (the first
 * to verify it holds it); a domain another organization has verified already, or one this organization claims
 * already, is 409 `domain_already_claimed`, naming no organization.
 */
export async function addOrganizationDomain(ctx: TenantContext, input: { id: string; domain: string }) {
  const org = await findOrganization(ctx, input.id);
  const name = canonicalDomain(input.domain);
  if (await verifiedElsewhere(ctx.em, org.application, org.id, name)) throw claimed();
  const domain = ctx.em.create(OrganizationDomainEntity, {
    id: newId(),
    application: org.application,
    organization: org.id,
    domain: name,
    status: 'pending_verification',
    verificationToken: randomBase62(43),
    joinPolicy: 'invite_only',
    ssoPolicy: 'optional',
    verifiedAt: null,
  });
  const record = toRecord(domain);
  recordEvent(ctx.em, org.application, 'organization_domain.created', record);
  try {
    await ctx.em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw claimed();
    throw error;
  }
  return record;
}

export async function listOrganizationDomains(ctx: TenantContext, organizationId: string) {
  const org = await findOrganization(ctx, organizationId);
  const domains = await ctx.em.find(
    OrganizationDomainEntity,
    { organization: org.id },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return domains.map(toRecord);
}

/**
 * Looks the TXT record up now (custom domains' resolver: `GATEHOUSE_DNS_SERVERS`, else the system's). Found: the
 * claim becomes `verified` with `organization_domain.verified` — unless another organization verified the domain
 * first (409 `domain_already_claimed`; the partial unique index decides two verifies at once, on any processes).
 * Not found: the claim stays pending, or is `failed` 7 days after it was made. A verified claim is answered as is.
 */
export async function verifyOrganizationDomain(ctx: TenantContext, input: { id: string; domain_id: string }) {
  const domain = await findDomain(ctx, input);
  if (domain.status === 'verified') return toRecord(domain);
  // Each verify makes the service query DNS: bounded per application.
  await ctx.services.rateLimits.consume(
    [{ name: 'organization_domain_verify', key: domain.application, points: 60, windowS: 60 }],
    ctx.response.headers,
  );
  if (await verifiedElsewhere(ctx.em, domain.application, domain.organization, domain.domain)) throw claimed();
  const error = await lookUpChallenge(domain.domain, domain.verificationToken, ctx.services.dnsServers);
  if (error) {
    if (domain.status === 'pending_verification' && Date.now() - domain.createdAt.getTime() > FAIL_AFTER_MS) {
      await ctx.em.nativeUpdate(
        OrganizationDomainEntity,
        { id: domain.id, status: 'pending_verification' },
        { status: 'failed', updatedAt: new Date() },
      );
      await ctx.em.refresh(domain);
    }
    return toRecord(domain);
  }
  try {
    await ctx.em.transactional(async (em) => {
      const rows = await em.execute<Array<{ verified_at: Date | string }>>(
        `update organization_domains set status = 'verified', verified_at = now(), updated_at = now()
          where id = ? and status <> 'verified' returning verified_at`,
        [domain.id],
      );
      if (rows[0]) {
        const verifiedAt = new Date(rows[0].verified_at);
        recordEvent(em, domain.application, 'organization_domain.verified', {
          ...toRecord(domain),
          status: 'verified',
          verified_at: verifiedAt.toISOString(),
        });
      }
    });
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) throw claimed();
    throw error;
  }
  await ctx.em.refresh(domain);
  return toRecord(domain);
}

/** The policies of a verified domain; before verification 409 `domain_not_verified`. */
export async function updateOrganizationDomain(
  ctx: TenantContext,
  input: { id: string; domain_id: string; join_policy?: string; sso_policy?: string },
) {
  const domain = await findDomain(ctx, input);
  if (domain.status !== 'verified') {
    throw new AppError('domain_not_verified', 'The domain must be verified before its policies can be set');
  }
  if (input.join_policy !== undefined) domain.joinPolicy = input.join_policy;
  if (input.sso_policy !== undefined) domain.ssoPolicy = input.sso_policy;
  domain.updatedAt = new Date();
  const record = toRecord(domain);
  recordEvent(ctx.em, domain.application, 'organization_domain.updated', record);
  await ctx.em.flush();
  return record;
}

export async function deleteOrganizationDomain(ctx: TenantContext, input: { id: string; domain_id: string }) {
  const domain = await findDomain(ctx, input);
  recordEvent(ctx.em, domain.application, 'organization_domain.deleted', {
    id: domain.id,
    organization_id: domain.organization,
    domain: domain.domain,
  });
  await ctx.em.nativeDelete(OrganizationDomainEntity, { id: domain.id });
  await ctx.em.flush();
  return { id: domain.id, deleted: true as const };
}

// ——— Sign-in effects ———

/** The domain of an email address as domains are stored (IDN as punycode), or null for no usable address. */
function domainOfEmail(email: string): string | null {
  const at = email.lastIndexOf('@');
  if (at < 0) return null;
  const ascii = domainToASCII(
    email
      .slice(at + 1)
      .trim()
      .toLowerCase()
      .replace(/\.$/, ''),
  );
  return ascii || null;
}

interface VerifiedDomain {
  id: string;
  organization_id: string;
  join_policy: string;
  sso_policy: string;
}

/** The verified claim of the address's domain in the application (at most one), or null. */
async function verifiedDomainOf(em: EntityManager, applicationId: string, email: string): Promise<VerifiedDomain | null> {
  const domain = domainOfEmail(email);
  if (!domain) return null;
  const [row] = await em.execute<VerifiedDomain[]>(
    `select id, organization_id, join_policy, sso_policy from organization_domains
      where application_id = ? and domain = ? and status = 'verified'`,
    [applicationId, domain],
  );
  return row ?? null;
}

/** A user's address counts only when verified (CONTRACT §8). */
const verifiedEmailOf = (user: User) => (user.emailVerified && user.emailNormalized ? user.emailNormalized : null);

/**
 * Over the user's row `u`: a verified email whose domain has a verified claim matching `policy`. An address whose
 * domain is not plain ASCII labels (an IDN, compared as punycode; a trailing dot) always matches, so the JavaScript
 * side (`domainOfEmail`) decides it: the SQL may only ever say "maybe" where JavaScript would say "yes".
 */
/** The part of the user's address after its last `@` (as `domainOfEmail` reads it), over the user's row `u`. */
const EMAIL_DOMAIN_SQL = `substring(u.email_normalized from '@([^@]*)$')`;
const verifiedDomainSql = (policy: string) =>
  `(u.email_verified and u.email_normalized is not null and (
     coalesce(${EMAIL_DOMAIN_SQL}, '') !~ '^[a-z0-9-]+(\\.[a-z0-9-]+)*$'
     or exists (select 1 from organization_domains d where d.application_id = u.application_id
                  and d.domain = ${EMAIL_DOMAIN_SQL} and d.status = 'verified' and ${policy})))`;

/** The organization holding the address's domain verified, for `sso/start`, the magic link's start and SAML. */
export const domainOwner: DomainOwnerSource = async (em, applicationId, email) => {
  const domain = await verifiedDomainOf(em, applicationId, email);
  return domain ? { organizationId: domain.organization_id, ssoRequired: domain.sso_policy === 'required' } : null;
};

/**
 * `sso_policy: required` as a sign-in check: a first factor (not a resumed step: its first factor was judged) of a
 * user whose verified email is at such a domain is refused with 403 `sso_required`, unless it is a SAML sign-in
 * through a connection of that organization.
 */
export const ssoPolicyCheck: SignInCheck = {
  appliesTo: ({ resumed }) => !resumed,
  clearSql: `not ${verifiedDomainSql(`d.sso_policy = 'required'`)}`,
  check: async (em, application, user, attempt) => {
    const email = verifiedEmailOf(user);
    const domain = email ? await verifiedDomainOf(em, application.id, email) : null;
    if (domain?.sso_policy !== 'required') return null;
    if (attempt.firstFactor === 'saml' && attempt.ssoOrganizationId === domain.organization_id) return null;
    throw ssoRequired(domain.organization_id);
  },
};

/**
 * `join_policy: automatic`, when a sign-in completes: the user becomes a member (`source: domain`, role `member`)
 * through `insertMembership`, so seats are enforced. A membership already there is left as it is; a refusal (a full
 * organization) does not fail the sign-in: it is recorded as `organization_domain.join_skipped` with its reason.
 */
export const automaticJoin: SignInCompletion = {
  dueSql: `${verifiedDomainSql(`d.join_policy = 'automatic'`)}
    and not exists (select 1 from organization_members m join organization_domains d on d.organization_id = m.organization_id
                     where m.user_id = u.id and d.application_id = u.application_id
                       and d.domain = ${EMAIL_DOMAIN_SQL} and d.status = 'verified')`,
  run: async (em: EntityManager, hooks: Hooks, application: Application, user: User) => {
    const email = verifiedEmailOf(user);
    const domain = email ? await verifiedDomainOf(em, application.id, email) : null;
    if (domain?.join_policy !== 'automatic') return;
    try {
      await em.transactional((tx) =>
        insertMembership(hooks, tx, { organizationId: domain.organization_id, user, role: 'member', source: 'domain' }),
      );
    } catch (error) {
      if (!(error instanceof AppError) || error.code === 'already_member') return;
      const skipped = em.fork();
      recordEvent(skipped, application.id, 'organization_domain.join_skipped', {
        organization_id: domain.organization_id,
        domain_id: domain.id,
        user_id: user.id,
        reason: error.code,
      });
      await skipped.flush();
    }
  },
};

/**
 * Whether the organization has verified the domain (a SCIM directory's new user has a verified email only then: the
 * directories module asks through `verifiedDomainChecks`), over `v(application_id, organization_id, domain)`.
 */
export const hasVerifiedDomain: VerifiedDomainCheck = {
  sql: `exists (select 1 from organization_domains d where d.application_id = v.application_id
                  and d.organization_id = v.organization_id and d.domain = lower(v.domain) and d.status = 'verified')`,
};
