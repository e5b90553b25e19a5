import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { curl, EmptyState } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { when } from '../../format.ts';

type Domain = Outputs['organizations']['domains']['list'][number];

const STATUS_TEXT: Record<Domain['status'], string> = {
  pending_verification: 'pending verification',
  verified: 'verified',
  failed: 'failed',
};

/**
 * The organization's domains: claim one, the TXT record that proves it (with copy buttons), verify now, the join and
 * SSO policies of a verified one, remove.
 */
export function Domains({ orgId }: { orgId: string }) {
  const trpc = app.useTRPC();
  const domains = useQuery(trpc.organizations.domains.list.queryOptions({ id: orgId }));
  return (
    <div>
      <h2>Domains</h2>
      <p>
        A verified domain lets people with an email address there join the organization on their own, or makes them sign in
        through its SSO.
      </p>
      {domains.isPending && <p role="status">Loading the domains…</p>}
      <ErrorNotice error={domains.error} title="The domains could not be listed" />
      {domains.data && domains.data.length === 0 && (
        <EmptyState
          title="No domain yet"
          cli={`npx gatehouse orgs domains add ${orgId} acme.com`}
          curl={curl(`/v1/organizations/${orgId}/domains`, { method: 'POST', body: '{"domain": "acme.com"}' })}
        />
      )}
      {domains.data?.map((domain) => (
        <DomainPanel key={domain.id} orgId={orgId} domain={domain} />
      ))}
      <ClaimDomain orgId={orgId} />
    </div>
  );
}

function DomainPanel({ orgId, domain }: { orgId: string; domain: Domain }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [said, setSaid] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.organizations.domains.list.queryKey({ id: orgId }) });
  const verify = useMutation(
    trpc.organizations.domains.verify.mutationOptions({
      onSuccess: (checked) => {
        setSaid(
          checked.status === 'verified'
            ? `${checked.domain} is verified.`
            : checked.status === 'failed'
              ? 'The claim is more than 7 days old and failed: remove it and claim the domain again.'
              : 'The TXT record was not found yet. DNS changes can take a while: try again in a few minutes.',
        );
        return refresh();
      },
    }),
  );
  const remove = useMutation(trpc.organizations.domains.delete.mutationOptions({ onSuccess: refresh }));
  const headingId = `domain-${domain.id}`;
  return (
    <article className="panel" aria-labelledby={headingId}>
      <h3 id={headingId}>
        {domain.domain} <span className="badge">{STATUS_TEXT[domain.status]}</span>
      </h3>
      {domain.status === 'verified' ? (
        <>
          <p>Verified {when(domain.verified_at)}.</p>
          <Policies key={`${domain.join_policy}:${domain.sso_policy}`} orgId={orgId} domain={domain} />
        </>
      ) : (
        <>
          <p>
            Create this DNS record at the domain's DNS host, then verify. A claim not verified within 7 days fails (claimed{' '}
            {when(domain.created_at)}).
          </p>
          <ListTable
            caption={`The TXT record that proves ${domain.domain}`}
            columns={['Type', 'Name', 'Value']}
            rows={[domain.verification]}
            rowKey={(record) => record.type}
          >
            {(record) => (
              <>
                <td>{record.type}</td>
                <td>
                  <code>{record.name}</code>{' '}
                  <CopyButton value={record.name} label={`Copy the record name for ${domain.domain}`} />
                </td>
                <td>
                  <code>{record.value}</code>{' '}
                  <CopyButton value={record.value} label={`Copy the record value for ${domain.domain}`} />
                </td>
              </>
            )}
          </ListTable>
          {domain.status === 'pending_verification' && (
            <Button
              className="button primary"
              aria-label={`Verify now: ${domain.domain}`}
              isDisabled={verify.isPending}
              onPress={() => verify.mutate({ id: orgId, domain_id: domain.id })}
            >
              {verify.isPending ? 'Looking the record up…' : 'Verify now'}
            </Button>
          )}
        </>
      )}
      <p role="status" className="status">
        {said}
      </p>
      <ErrorNotice error={verify.error} title="The domain was not verified" />
      <ConfirmButton
        label="Remove"
        ariaLabel={`Remove ${domain.domain}`}
        title={`Remove ${domain.domain}?`}
        confirmLabel="Remove the domain"
        isDisabled={remove.isPending}
        onConfirm={() => remove.mutate({ id: orgId, domain_id: domain.id })}
      >
        <p>Its join and SSO policies end at once. Members who joined through it stay members.</p>
      </ConfirmButton>
      <ErrorNotice error={remove.error} title="The domain was not removed" />
    </article>
  );
}

function Policies({ orgId, domain }: { orgId: string; domain: Domain }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [join, setJoin] = useState(domain.join_policy);
  const [sso, setSso] = useState(domain.sso_policy);
  const update = useMutation(
    trpc.organizations.domains.update.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.organizations.domains.list.queryKey({ id: orgId }) }),
    }),
  );
  const changed = join !== domain.join_policy || sso !== domain.sso_policy;
  return (
    <Form
      aria-label={`Policies of ${domain.domain}`}
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({ id: orgId, domain_id: domain.id, join_policy: join, sso_policy: sso });
      }}
    >
      <RadioGroup
        className="field radios"
        value={join}
        onChange={(value) => setJoin(value === 'automatic' ? 'automatic' : 'invite_only')}
      >
        <Label>Who joins</Label>
        <Radio value="invite_only">By invitation only</Radio>
        <Radio value="automatic">Anyone with a verified email at {domain.domain}, when they sign in</Radio>
      </RadioGroup>
      <RadioGroup
        className="field radios"
        value={sso}
        onChange={(value) => setSso(value === 'required' ? 'required' : 'optional')}
      >
        <Label>How they sign in</Label>
        <Text slot="description">Applies to people with an email address at {domain.domain}.</Text>
        <Radio value="optional">Any sign-in method</Radio>
        <Radio value="required">Only through the organization's SAML connections</Radio>
      </RadioGroup>
      <Button type="submit" className="button primary" isDisabled={update.isPending || !changed}>
        {update.isPending ? 'Saving…' : 'Save the policies'}
      </Button>
      <ErrorNotice error={update.error} title="The policies were not saved" />
    </Form>
  );
}

function ClaimDomain({ orgId }: { orgId: string }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [domain, setDomain] = useState('');
  const add = useMutation(
    trpc.organizations.domains.add.mutationOptions({
      onSuccess: () => {
        setDomain('');
        return queryClient.invalidateQueries({ queryKey: trpc.organizations.domains.list.queryKey({ id: orgId }) });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="claim-domain">
      <h3 id="claim-domain">Claim a domain</h3>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate({ id: orgId, domain: domain.trim() });
        }}
      >
        <TextField className="field" isRequired value={domain} onChange={setDomain} maxLength={253}>
          <Label>Domain</Label>
          <Input placeholder="acme.com" />
          <Text slot="description">The organization's email domain. You get a TXT record to publish to prove it.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={add.isPending}>
          {add.isPending ? 'Claiming…' : 'Claim the domain'}
        </Button>
      </Form>
      <ErrorNotice error={add.error} title="The domain was not claimed" />
      {add.data && (
        <p className="notice success" role="status">
          {add.data.domain} claimed: publish its TXT record (above), then verify it.
        </p>
      )}
    </section>
  );
}
