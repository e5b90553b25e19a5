import { type Hooks, Registry } from '../../lib/modules.ts';

/**
 * Whether an organization has verified an email domain (CONTRACT §8: a directory's new user has a verified email only
 * then), as a SQL condition (no parameters) over `v(application_id, organization_id, domain)`, so that the SCIM create
 * reads it with the rest of what it needs in one statement. The organization domains module answers it; until one is
 * composed, no domain is verified, so a provisioned address stays unverified (the safe answer).
 */
export interface VerifiedDomainCheck {
  sql: string;
}

export const verifiedDomainChecks = new Registry<VerifiedDomainCheck>('organization verified domain check', { single: true });

/** The composed check's condition over `v(application_id, organization_id, domain)`, `false` when none is composed. */
export function organizationVerifiedDomainSql(hooks: Hooks): string {
  const [check] = hooks.get(verifiedDomainChecks);
  return check ? `(${check.sql})` : 'false';
}
