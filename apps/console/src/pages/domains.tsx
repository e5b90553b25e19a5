import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { when } from '../format.ts';

type Domain = Outputs['domains']['list'][number];

const STATUS: Record<Domain['status'], string> = {
  pending_verification: 'waiting for DNS',
  verified: 'verified',
  failed: 'failed',
};

/** Why the last check did not verify, in words. */
const REASON: Record<NonNullable<Domain['verification_error']>, string> = {
  txt_not_found: 'no TXT record found yet',
  txt_mismatch: 'a TXT record is there, but not with this value',
  dns_failed: 'the DNS lookup failed',
};

/**
 * The application's custom domains: add one, the DNS records to publish for it (`?domain=`), look the TXT record up
 * now, remove one.
 */
export function DomainsPage() {
  const { appId } = useParams({ from: '/apps/$appId/domains' });
  const { domain: selected } = useSearch({ from: '/apps/$appId/domains' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const domains = useQuery(trpc.domains.list.queryOptions({ id: appId }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.domains.list.queryKey({ id: appId }) });
  const verify = useMutation(trpc.domains.verify.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.domains.delete.mutationOptions({ onSuccess: refresh }));
  const current = domains.data?.find((d) => d.id === selected);

  return (
    <section>
      <h1>Custom domains</h1>
      <p>
        Serve this application's hosted pages on your own domain (auth.example.com). Publish the two DNS records shown for it;
        once the TXT record is found, the domain is verified and its certificate is issued.
      </p>
      {domains.isPending && <p role="status">Loading the domains…</p>}
      <ErrorNotice error={domains.error} title="The domains could not be listed" />
      <ErrorNotice error={verify.error} title="The domain was not checked" />
      <ErrorNotice error={remove.error} title="The domain was not removed" />
      {verify.data && (
        <p className={`notice ${verify.data.status === 'verified' ? 'success' : ''}`} role="status">
          {verify.data.status === 'verified'
            ? `${verify.data.domain} is verified.`
            : `${verify.data.domain} is not verified yet: ${verify.data.verification_error ? REASON[verify.data.verification_error] : 'not checked'}.`}
        </p>
      )}
      {domains.data && (
        <ListTable
          caption="Custom domains"
          columns={['Domain', 'Status', 'Certificate', 'Last checked']}
          actions="Actions"
          rows={domains.data}
          rowKey={(d) => d.id}
          current={(d) => d.id === selected}
          empty={
            <EmptyState
              title="No custom domain"
              cli="npx gatehouse domains add auth.example.com"
              curl={curl('/v1/applications/$APP/domains', { method: 'POST', body: '{"domain": "auth.example.com"}' })}
            />
          }
        >
          {(d) => (
            <>
              <td>
                <Link from="/apps/$appId/domains" search={{ domain: d.id }} aria-label={`DNS records of ${d.domain}`}>
                  {d.domain}
                </Link>
              </td>
              <td>
                <span className={`badge ${d.status}`}>{STATUS[d.status]}</span>
                {d.verification_error && <div className="meta">{REASON[d.verification_error]}</div>}
              </td>
              <td>{d.tls_status}</td>
              <td>{when(d.last_checked_at)}</td>
              <td className="row-actions">
                {d.status !== 'verified' && (
                  <Button
                    className="button small"
                    aria-label={`Verify ${d.domain} now`}
                    isDisabled={verify.isPending}
                    onPress={() => verify.mutate({ id: appId, domain_id: d.id })}
                  >
                    Verify now
                  </Button>
                )}
                <ConfirmButton
                  label="Remove"
                  ariaLabel={`Remove ${d.domain}`}
                  title={`Remove ${d.domain}?`}
                  confirmLabel="Remove the domain"
                  isDisabled={remove.isPending}
                  onConfirm={() => remove.mutate({ id: appId, domain_id: d.id })}
                >
                  <p>The hosted pages stop answering on it. Adding it again gives it a new TXT value to publish.</p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
      {current && <DnsRecords domain={current} />}
      {selected && domains.data && !current && <p role="status">That domain is no longer configured.</p>}
      <AddDomain appId={appId} />
    </section>
  );
}

/** The records to publish, each value with a copy button. */
function DnsRecords({ domain }: { domain: Domain }) {
  const records = [domain.dns_records.txt, domain.dns_records.cname];
  return (
    <section className="panel" aria-labelledby="dns-records">
      <h2 id="dns-records">DNS records for {domain.domain}</h2>
      <p>
        {domain.status === 'verified'
          ? `Verified ${when(domain.verified_at)}. Keep both records: the TXT record proves the domain is yours, the CNAME sends its visitors here.`
          : 'Create these two records at your DNS provider, then press "Verify now". Gatehouse also checks again on its own for 7 days.'}
      </p>
      <ListTable
        caption={`DNS records to create for ${domain.domain}`}
        columns={['Type', 'Name', 'Value']}
        rows={records}
        rowKey={(r) => r.type}
      >
        {(r) => (
          <>
            <td>{r.type}</td>
            <td>
              <code>{r.name}</code> <CopyButton value={r.name} label={`Copy the ${r.type} record's name`} />
            </td>
            <td>
              <code className="wrap">{r.value}</code> <CopyButton value={r.value} label={`Copy the ${r.type} record's value`} />
            </td>
          </>
        )}
      </ListTable>
    </section>
  );
}

function AddDomain({ appId }: { appId: string }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/apps/$appId/domains' });
  const [name, setName] = useState('');
  const add = useMutation(
    trpc.domains.add.mutationOptions({
      onSuccess: async (added) => {
        setName('');
        await queryClient.invalidateQueries({ queryKey: trpc.domains.list.queryKey({ id: appId }) });
        // Its records are what to do next: the URL opens them.
        await navigate({ search: { domain: added.id } });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="add-domain">
      <h2 id="add-domain">Add a domain</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate({ id: appId, domain: name });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={253}>
          <Label>Domain</Label>
          <Input placeholder="auth.example.com" />
          <Text slot="description">A host name you control; each domain belongs to one application.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add the domain'}
        </Button>
      </Form>
      <ErrorNotice error={add.error} title="The domain was not added" />
    </section>
  );
}
