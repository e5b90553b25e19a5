import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, fieldOf, notFound } from '../../errors.ts';
import { randomBase62 } from '../../lib/crypto.ts';
import type { HousekeepingServices } from '../../lib/housekeeping.ts';
import { newId } from '../../lib/ids.ts';
import { dnsResolver } from '../../lib/ssrf.ts';
import { iso } from '../../lib/time.ts';
import { ownApplication } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { type CustomDomain, CustomDomainEntity } from './custom-domain.entity.ts';
import { CHALLENGE_PREFIX, canonicalDomain } from './domain-name.ts';
import type { CustomDomainRecord, VerificationError } from './domains.schema.ts';

/** Seconds before each background re-check of a pending domain (the last one repeats). */
const LAST_BACKOFF_S = 21_600;
const RECHECK_BACKOFF_S = [60, 300, 900, 1800, 3600, 7200, 14_400, LAST_BACKOFF_S];
/** A domain still pending this long after it was added is `failed` (its TLS too). */
const FAIL_AFTER = "interval '7 days'";
/** How long a process's claim of a domain lasts while it looks the record up (another takes over after a crash). */
const CLAIM_LEASE = "interval '10 minutes'";
const BATCH = 50;

/** The TXT challenge of a domain (custom domains and organization domains alike): its name and expected value. */
export const challengeName = (domain: string) => `${CHALLENGE_PREFIX}.${domain}`;
export const challengeValue = (token: string) => `gatehouse-domain-verification=${token}`;
const backoffS = (checks: number) => RECHECK_BACKOFF_S[checks] ?? LAST_BACKOFF_S;

const toDomainRecord = (d: CustomDomain, cnameTarget: string): CustomDomainRecord => ({
  id: d.id,
  domain: d.domain,
  // the entity types these columns as string; only the schema's values are ever written to them.
  status: d.status as CustomDomainRecord['status'],
  tls_status: d.tlsStatus as CustomDomainRecord['tls_status'], // a string column too
  dns_records: {
    txt: { type: 'TXT', name: challengeName(d.domain), value: challengeValue(d.verificationToken) },
    cname: { type: 'CNAME', name: d.domain, value: cnameTarget },
  },
  // the column holds only the reasons this module writes, which are the schema's values.
  verification_error: (d.verificationError ?? null) as CustomDomainRecord['verification_error'],
  last_checked_at: iso(d.lastCheckedAt),
  created_at: d.createdAt.toISOString(),
  verified_at: iso(d.verifiedAt),
});

async function findDomain(ctx: TenantContext, applicationId: string, domainId: string): Promise<CustomDomain> {
  ownApplication(ctx, applicationId);
  const domain = await ctx.em.findOne(CustomDomainEntity, { id: domainId, application: applicationId });
  if (!domain) throw notFound('Custom domain');
  return domain;
}

/**
 * S7: a pending domain with the records to publish, and `custom_domain.added` in the same transaction. The unique
 * index on `domain` decides between concurrent adds of one name, in this application or another; the 409 never says
 * which application holds it.
 */
export async function addDomain(ctx: TenantContext, input: { id: string; domain: string }) {
  const application = ownApplication(ctx, input.id);
  const name = canonicalDomain(input.domain);
  const domain = ctx.em.create(CustomDomainEntity, {
    id: newId(),
    application: application.id,
    domain: name,
    status: 'pending_verification',
    tlsStatus: 'pending',
    verificationToken: randomBase62(43),
    verifiedAt: null,
    verificationError: null,
    lastCheckedAt: null,
    checkCount: 0,
    nextCheckAt: new Date(Date.now() + backoffS(0) * 1000),
  });
  recordEvent(ctx.em, application.id, 'custom_domain.added', {
    id: domain.id,
    domain: name,
    // the entity types the column as string; only the schema's values are ever written to it.
    status: domain.status as CustomDomainRecord['status'],
  });
  try {
    await ctx.em.flush();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException) {
      throw new AppError('domain_already_configured', 'This domain is already configured');
    }
    throw error;
  }
  return toDomainRecord(domain, ctx.services.cnameTarget);
}

export async function listDomains(ctx: TenantContext, applicationId: string) {
  ownApplication(ctx, applicationId);
  const domains = await ctx.em.find(
    CustomDomainEntity,
    { application: applicationId },
    { orderBy: { createdAt: 'desc', id: 'desc' } },
  );
  return domains.map((d) => toDomainRecord(d, ctx.services.cnameTarget));
}

/**
 * Looks the TXT record up now (the resolvers of `GATEHOUSE_DNS_SERVERS`, else the system's). Found with the token:
 * `verified` and `custom_domain.verified`; otherwise the status stays and `verification_error` says why. A verified
 * domain is answered as it is (no lookup, no second event).
 */
export async function verifyDomain(ctx: TenantContext, input: { id: string; domain_id: string }) {
  const domain = await findDomain(ctx, input.id, input.domain_id);
  // Each verify makes the service query DNS: bounded per application.
  await ctx.services.rateLimits.consume(
    [{ name: 'domain_verify', key: domain.application, points: 60, windowS: 60 }],
    ctx.response.headers,
  );
  if (domain.status !== 'verified') {
    const error = await lookUpChallenge(domain.domain, domain.verificationToken, ctx.services.dnsServers);
    await recordCheck(ctx.em, domain, error);
    await ctx.em.refresh(domain);
  }
  return toDomainRecord(domain, ctx.services.cnameTarget);
}

export async function deleteDomain(ctx: TenantContext, input: { id: string; domain_id: string }) {
  const domain = await findDomain(ctx, input.id, input.domain_id);
  await ctx.em.nativeDelete(CustomDomainEntity, { id: domain.id });
  return { id: domain.id, deleted: true as const };
}

/**
 * Caddy's on-demand TLS `ask`: 200 when the name is a verified custom domain of some application, 404 for anything
 * else (unknown, pending, failed, or not a valid name), and nothing more: no application, no status.
 */
export async function allowedDomain(ctx: Context, input: { domain: string }) {
  await ctx.services.rateLimits.consume(
    [{ name: 'domain_allowed', key: ctx.ip, points: 300, windowS: 60 }],
    ctx.response.headers,
  );
  let name: string;
  try {
    name = canonicalDomain(input.domain);
  } catch {
    throw notFound('Domain');
  }
  const verified = await ctx.em.count(CustomDomainEntity, { domain: name, status: 'verified' });
  if (!verified) throw notFound('Domain');
  return { domain: name, allowed: true as const };
}

/** null when a TXT record at `_gatehouse-challenge.<domain>` holds the token, else why not. */
export async function lookUpChallenge(
  domain: string,
  token: string,
  dnsServers: readonly string[] | undefined,
): Promise<VerificationError | null> {
  let records: string[][];
  try {
    records = await dnsResolver(dnsServers).resolveTxt(challengeName(domain));
  } catch (error) {
    const code = fieldOf(error, 'code');
    return code === 'ENODATA' || code === 'ENOTFOUND' ? 'txt_not_found' : 'dns_failed';
  }
  if (!records.length) return 'txt_not_found';
  // A long TXT value arrives in 255-byte chunks: one record is its chunks joined.
  return records.some((chunks) => chunks.join('') === challengeValue(token)) ? null : 'txt_mismatch';
}

/**
 * Writes a check's outcome with conditional updates, so a manual verify and a background re-check of one domain (on
 * any processes) verify it once and emit `custom_domain.verified` once. Not verified: a pending domain is re-checked
 * after the next back-off step, or becomes `failed` (TLS too) 7 days after it was added; a failed one stays failed.
 */
async function recordCheck(
  em: EntityManager,
  domain: Pick<CustomDomain, 'id' | 'application' | 'domain' | 'checkCount'>,
  error: VerificationError | null,
): Promise<void> {
  if (!error) {
    await em.transactional(async (tx) => {
      const rows = await tx.execute<Array<{ verified_at: Date | string }>>(
        `update custom_domains set status = 'verified', tls_status = 'active', verified_at = now(), verification_error = null,
           last_checked_at = now(), check_count = check_count + 1, next_check_at = null
         where id = ? and status <> 'verified' returning verified_at`,
        [domain.id],
      );
      if (rows[0]) {
        recordEvent(tx, domain.application, 'custom_domain.verified', {
          id: domain.id,
          domain: domain.domain,
          verified_at: new Date(rows[0].verified_at).toISOString(),
        });
      }
    });
    return;
  }
  const expired = `status = 'pending_verification' and created_at < now() - ${FAIL_AFTER}`;
  await em.execute(
    `update custom_domains set verification_error = ?, last_checked_at = now(), check_count = check_count + 1,
       status = case when ${expired} then 'failed' else status end,
       tls_status = case when ${expired} then 'failed' else tls_status end,
       next_check_at = case when status = 'pending_verification' and not (${expired})
         then now() + cast(? as integer) * interval '1 second' else null end
     where id = ? and status <> 'verified'`,
    [error, backoffS(domain.checkCount + 1), domain.id],
  );
}

/**
 * The background re-check (a housekeeping task, in every process): claims the pending domains that are due with
 * `FOR UPDATE SKIP LOCKED`, moving their next check a lease ahead in the same statement, so two processes never take
 * the same domain; looks each up outside any transaction; records the outcome. Answers how many were checked.
 */
export async function recheckPendingDomains(em: EntityManager, services: HousekeepingServices): Promise<number> {
  let checked = 0;
  for (;;) {
    const claimed = await em.execute<
      Array<{ id: string; application_id: string; domain: string; verification_token: string; check_count: number }>
    >(
      `update custom_domains set next_check_at = now() + ${CLAIM_LEASE}
       where id in (select id from custom_domains where status = 'pending_verification' and next_check_at <= now()
                    order by next_check_at limit ${BATCH} for update skip locked)
       returning id, application_id, domain, verification_token, check_count`,
    );
    // The lookups run side by side; the writes one after another (PGlite is one connection).
    const checks = await Promise.all(
      claimed.map(async (row) => ({
        row,
        error: await lookUpChallenge(row.domain, row.verification_token, services.dnsServers),
      })),
    );
    for (const { row, error } of checks) {
      const domain = { id: row.id, application: row.application_id, domain: row.domain, checkCount: Number(row.check_count) };
      await recordCheck(em, domain, error);
    }
    checked += claimed.length;
    if (claimed.length < BATCH) return checked;
  }
}
