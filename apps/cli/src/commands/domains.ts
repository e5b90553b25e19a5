import type { CustomDomain, GatehouseClient } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { confirm, mustConfirm } from '../confirm.ts';
import { applicationClient } from '../context.ts';
import { exitNoUnless, present } from '../output.ts';
import { type Column, recordView, tableView } from '../ui/view.ts';

const columns: Column<CustomDomain>[] = [
  { key: 'id', header: 'ID', value: (d) => d.id },
  { key: 'domain', header: 'DOMAIN', value: (d) => d.domain },
  { key: 'status', header: 'STATUS', value: (d) => (d.verification_error ? `${d.status} (${d.verification_error})` : d.status) },
  { key: 'tls_status', header: 'TLS', value: (d) => d.tls_status },
  { key: 'verified_at', header: 'VERIFIED', value: (d) => d.verified_at },
  { key: 'created_at', header: 'CREATED', value: (d) => d.created_at },
];

const REASONS: Record<string, string> = {
  txt_not_found: 'no TXT record was found',
  txt_mismatch: 'a TXT record was found, but not with this token',
  dns_failed: 'the DNS lookup failed',
};

/** The record (its DNS records flattened for the terminal) and what to do next. */
function domainView(d: CustomDomain) {
  const { dns_records, ...rest } = d;
  const records =
    `Publish these DNS records, then run: gatehouse domains verify ${d.domain}\n` +
    `  ${dns_records.txt.name}  TXT    "${dns_records.txt.value}"\n` +
    `  ${dns_records.cname.name}  CNAME  ${dns_records.cname.value}`;
  const note =
    d.status === 'verified'
      ? `${d.domain} is verified; TLS certificates are issued by your proxy (README "Custom domains").`
      : d.verification_error
        ? `Not verified yet: ${REASONS[d.verification_error] ?? d.verification_error} at ${dns_records.txt.name}.\n${records}`
        : records;
  return recordView(rest, note);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A domain id, or a domain name as written (any case, trailing dot) looked up among the application's domains. */
async function domainId(gatehouse: GatehouseClient, applicationId: string, idOrName: string): Promise<string> {
  if (UUID.test(idOrName)) return idOrName;
  const name = idOrName.trim().toLowerCase().replace(/\.$/, '');
  const found = (await gatehouse.domains.list({ id: applicationId })).find((d) => d.domain === name);
  if (!found) throw new Error(`no custom domain ${name} in this application (see: gatehouse domains list)`);
  return found.id;
}

export function registerDomains(program: Command): void {
  const domains = program.command('domains').description('Manage custom domains (verified through a DNS TXT record)');

  domains
    .command('add')
    .description('Add a custom domain; prints the DNS records to publish')
    .argument('<domain>', 'a public host name, e.g. auth.example.com')
    .action(async (domain: string, _options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(command, 'Adding the domain', () => gatehouse.domains.add({ id: applicationId, domain }), domainView);
    });

  domains
    .command('list')
    .description("List the application's custom domains, newest first")
    .action(async (_options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      await present(
        command,
        'Listing custom domains',
        () => gatehouse.domains.list({ id: applicationId }),
        (rows) => tableView(columns, rows, 'No custom domains. Add one: gatehouse domains add auth.example.com'),
      );
    });

  domains
    .command('verify')
    .description('Look the TXT record up now: exit 0 when the domain is verified, exit 3 when it is not yet')
    .argument('<domain>', 'domain id or name')
    .action(async (idOrName: string, _options, command: Command) => {
      const { gatehouse, applicationId } = await applicationClient(command);
      const domain = await present(
        command,
        'Verifying the domain',
        async () =>
          gatehouse.domains.verify({ id: applicationId, domain_id: await domainId(gatehouse, applicationId, idOrName) }),
        domainView,
      );
      exitNoUnless(domain.status === 'verified');
    });

  domains
    .command('remove')
    .description('Remove a custom domain (its TLS certificate is no longer allowed)')
    .argument('<domain>', 'domain id or name')
    .option('-y, --yes', 'do not ask for confirmation (required when standard input is not a terminal)')
    .action(async (idOrName: string, options: { yes?: boolean }, command: Command) => {
      const ask = mustConfirm(options.yes, 'removing a domain stops serving it');
      const { gatehouse, applicationId } = await applicationClient(command);
      const id = await domainId(gatehouse, applicationId, idOrName);
      if (ask && !(await confirm(`Remove custom domain ${idOrName}? It stops being served.`))) {
        throw new Error('cancelled: nothing was removed');
      }
      await present(
        command,
        'Removing the domain',
        () => gatehouse.domains.delete({ id: applicationId, domain_id: id }),
        (deleted) => ({ kind: 'message', text: `Removed custom domain ${deleted.id}` }),
      );
    });
}
