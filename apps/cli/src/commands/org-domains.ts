import type { GatehouseClient, OrganizationDomain } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { confirm, mustConfirm } from '../confirm.ts';
import { secretKeyClient } from '../context.ts';
import { UsageError } from '../errors.ts';
import { exitNoUnless, present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const columns: Column<OrganizationDomain>[] = [
  { key: 'id', header: 'ID', value: (d) => d.id },
  { key: 'domain', header: 'DOMAIN', value: (d) => d.domain },
  { key: 'status', header: 'STATUS', value: (d) => d.status },
  { key: 'join_policy', header: 'JOIN', value: (d) => d.join_policy },
  { key: 'sso_policy', header: 'SSO', value: (d) => d.sso_policy },
  { key: 'verified_at', header: 'VERIFIED', value: (d) => d.verified_at },
  { key: 'created_at', header: 'CREATED', value: (d) => d.created_at },
];

/** The record (its TXT record flattened for the terminal) and what to do next. */
function domainView(org: string, d: OrganizationDomain) {
  const { verification, ...rest } = d;
  const note =
    d.status === 'verified'
      ? `${d.domain} is verified for organization ${org}. Set its policies: gatehouse orgs domains update ${org} ${d.domain} --join automatic --sso required`
      : `Publish this DNS record, then run: gatehouse orgs domains verify ${org} ${d.domain}\n` +
        `  ${verification.name}  TXT  "${verification.value}"`;
  return recordView(rest, note);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A domain id, or a domain name as written (any case, trailing dot) looked up among the organization's domains. */
async function domainId(gatehouse: GatehouseClient, org: string, idOrName: string): Promise<string> {
  if (UUID.test(idOrName)) return idOrName;
  const name = idOrName.trim().toLowerCase().replace(/\.$/, '');
  const found = (await gatehouse.organizations.domains.list({ id: org })).find((d) => d.domain === name);
  if (!found) throw new Error(`no domain ${name} in organization ${org} (see: gatehouse orgs domains list ${org})`);
  return found.id;
}

const JOIN = ['invite_only', 'automatic'] as const;
const SSO = ['optional', 'required'] as const;
const oneOf = <T extends string>(values: readonly T[], value: string | undefined, option: string): T | undefined => {
  if (value === undefined) return undefined;
  const found = values.find((v) => v === value);
  if (!found) throw new UsageError(`${option} must be one of ${values.join(', ')}`);
  return found;
};

/** `gatehouse orgs domains …`: an organization's verified domains and their join and SSO policies (CONTRACT §8). */
export function registerOrgDomains(orgs: Command): void {
  const domains = orgs
    .command('domains')
    .description("Manage an organization's domains (verified through a DNS TXT record) and their join and SSO policies");

  domains
    .command('add')
    .description('Claim a domain for an organization; prints the TXT record to publish')
    .argument('<org>', 'organization id')
    .argument('<domain>', 'a domain under a public suffix, e.g. acme.com')
    .action(async (org: string, domain: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Adding the domain',
        () => gatehouse.organizations.domains.add({ id: org, domain }),
        (d) => domainView(org, d),
      );
    });

  domains
    .command('list')
    .description("List an organization's domains, newest first")
    .argument('<org>', 'organization id')
    .action(async (org: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Listing domains',
        () => gatehouse.organizations.domains.list({ id: org }),
        (rows) => tableView(columns, rows, `No domains. Add one: gatehouse orgs domains add ${org} acme.com`),
      );
    });

  domains
    .command('verify')
    .description('Look the TXT record up now: exit 0 when the domain is verified, exit 3 when it is not yet')
    .argument('<org>', 'organization id')
    .argument('<domain>', 'domain id or name')
    .action(async (org: string, idOrName: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const domain = await present(
        command,
        'Verifying the domain',
        async () => gatehouse.organizations.domains.verify({ id: org, domain_id: await domainId(gatehouse, org, idOrName) }),
        (d) => domainView(org, d),
      );
      exitNoUnless(domain.status === 'verified');
    });

  domains
    .command('update')
    .description("Set a verified domain's policies")
    .argument('<org>', 'organization id')
    .argument('<domain>', 'domain id or name')
    .option('--join <policy>', 'invite_only, or automatic: a verified email at the domain joins at sign-in')
    .option('--sso <policy>', "optional, or required: only the organization's SAML connections sign such people in")
    .action(async (org: string, idOrName: string, options: { join?: string; sso?: string }, command: Command) => {
      const join_policy = oneOf(JOIN, options.join, '--join');
      const sso_policy = oneOf(SSO, options.sso, '--sso');
      if (!join_policy && !sso_policy) throw new UsageError('give --join and/or --sso');
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Updating the domain',
        async () =>
          gatehouse.organizations.domains.update({
            id: org,
            domain_id: await domainId(gatehouse, org, idOrName),
            ...(join_policy ? { join_policy } : {}),
            ...(sso_policy ? { sso_policy } : {}),
          }),
        (d) => domainView(org, d),
      );
    });

  domains
    .command('remove')
    .description('Remove a domain from an organization (its policies stop applying at once)')
    .argument('<org>', 'organization id')
    .argument('<domain>', 'domain id or name')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (org: string, idOrName: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing a domain ends its join and SSO policies');
      const gatehouse = await secretKeyClient(command);
      const id = await domainId(gatehouse, org, idOrName);
      if (ask && !(await confirm(`Remove domain ${idOrName} from organization ${org}? Its policies stop applying.`))) {
        throw new Error('cancelled: nothing was removed');
      }
      await present(
        command,
        'Removing the domain',
        () => gatehouse.organizations.domains.delete({ id: org, domain_id: id }),
        (deleted) => ({ kind: 'message', text: `Removed domain ${deleted.id} from organization ${org}` }),
      );
    });
}
