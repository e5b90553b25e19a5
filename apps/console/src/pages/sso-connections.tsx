import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useId, useState } from 'react';
import { Button, Checkbox, Form, Input, Label, Radio, RadioGroup, Text, TextArea, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { SSO_SOURCES, type SsoSource } from '../search.ts';

export type SamlConnection = Outputs['saml']['connections']['list'][number];

/** A certificate that expires within this many days is flagged: time to ask the IdP for its new one. */
const EXPIRY_WARNING_DAYS = 30;
const DAY_MS = 86_400_000;

/** The IdP certificate's expiry: its date, flagged when it is near or past, or "none" (every sign-in is refused). */
export function CertificateExpiry({ expiresAt }: { expiresAt: string | null }) {
  if (!expiresAt) return <span className="badge expired">no certificate: sign-ins are refused</span>;
  const days = Math.floor((Date.parse(expiresAt) - Date.now()) / DAY_MS);
  const date = new Date(expiresAt).toLocaleDateString();
  if (days < 0) {
    return (
      <>
        {date} <span className="badge expired">expired: sign-ins are refused</span>
      </>
    );
  }
  if (days <= EXPIRY_WARNING_DAYS) {
    return (
      <>
        {date} <span className="badge warning">expires in {days === 1 ? '1 day' : `${days} days`}</span>
      </>
    );
  }
  return <>{date}</>;
}

/** An organization's name, linked to its page (the connection holds only its id). */
export function OrganizationName({ appId, id }: { appId: string; id: string | null }) {
  const trpc = app.useTRPC();
  const organization = useQuery({ ...trpc.organizations.get.queryOptions({ id: id ?? '' }), enabled: id !== null });
  if (id === null) return <>the whole application</>;
  return (
    <Link to="/apps/$appId/organizations/$orgId" params={{ appId, orgId: id }}>
      {organization.data?.name ?? id}
    </Link>
  );
}

/** The application's SAML connections: the list (domain, organization, status, certificate expiry); create one. */
export function SsoConnectionsPage() {
  const { appId } = useParams({ from: '/apps/$appId/sign-in/sso/' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const connections = useQuery(trpc.saml.connections.list.queryOptions());
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.saml.connections.pathKey() });
  const enable = useMutation(trpc.saml.connections.enable.mutationOptions({ onSuccess: refresh }));
  const disable = useMutation(trpc.saml.connections.disable.mutationOptions({ onSuccess: refresh }));

  return (
    <section>
      <h1>SSO connections</h1>
      <p>
        Each connection lets the people of one company sign in with their own identity provider (Okta, Entra ID, Google
        Workspace…) over SAML. An email in the connection's domain finds it on the sign-in page.
      </p>
      {connections.isPending && <p role="status">Loading the connections…</p>}
      <ErrorNotice error={connections.error} title="The connections could not be listed" />
      <ErrorNotice error={enable.error ?? disable.error} title="The connection was not changed" />
      {connections.data && (
        <ListTable
          caption="SSO connections, newest first"
          columns={['Name', 'Domain', 'Organization', 'Status', 'IdP certificate expires']}
          actions="Actions"
          rows={connections.data}
          rowKey={(c) => c.id}
          empty={
            <EmptyState
              title="No SSO connection"
              cli="npx gatehouse saml create --metadata idp.xml --domain acme.com --name Acme"
              curl={curl('/v1/saml/connections/from-metadata', {
                method: 'POST',
                body: '{"metadata_url": "https://idp.acme.com/metadata.xml", "email_domain": "acme.com", "name": "Acme"}',
              })}
            />
          }
        >
          {(c) => (
            <>
              <td>
                <Link to="/apps/$appId/sign-in/sso/$connectionId" params={{ appId, connectionId: c.id }}>
                  {c.name}
                </Link>
              </td>
              <td>{c.email_domain ?? '—'}</td>
              <td>
                <OrganizationName appId={appId} id={c.organization_id} />
              </td>
              <td>
                <span className={`badge ${c.enabled ? 'active' : 'disabled'}`}>{c.enabled ? 'enabled' : 'disabled'}</span>
              </td>
              <td>
                <CertificateExpiry expiresAt={c.certificate_expires_at} />
              </td>
              <td className="row-actions">
                <Button
                  className="button small"
                  aria-label={`${c.enabled ? 'Disable' : 'Enable'} ${c.name}`}
                  isDisabled={enable.isPending || disable.isPending}
                  onPress={() => (c.enabled ? disable : enable).mutate({ id: c.id })}
                >
                  {c.enabled ? 'Disable' : 'Enable'}
                </Button>
              </td>
            </>
          )}
        </ListTable>
      )}
      <CreateConnection appId={appId} />
    </section>
  );
}

const SOURCE_LABELS: Record<SsoSource, string> = {
  file: 'Metadata file',
  url: 'Metadata URL',
  xml: 'Paste the metadata',
  manual: 'Enter the values by hand',
};

/** A certificate as an administrator exports it (PEM, or its base64 alone): the base64 of its DER bytes. */
export const certificateBase64 = (value: string) =>
  value
    .replace(/-----(BEGIN|END) CERTIFICATE-----/g, '')
    .replace(/\s+/g, '')
    .trim();

/** An optional text field: empty means "not set". */
const optional = (value: string) => (value.trim() === '' ? undefined : value.trim());

/**
 * A new connection, from the IdP's metadata (a file read in the browser, a URL the server fetches once, or pasted XML)
 * or from its entity id, sign-in URL and certificate typed by hand. The source is in the URL (`?source=`).
 */
function CreateConnection({ appId }: { appId: string }) {
  const { source = 'file' } = useSearch({ from: '/apps/$appId/sign-in/sso/' });
  const navigate = useNavigate({ from: '/apps/$appId/sign-in/sso/' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const fileId = useId();
  const [file, setFile] = useState<{ name: string; xml: string } | null>(null);
  const [fileError, setFileError] = useState<string | null>(null);
  const [url, setUrl] = useState('');
  const [xml, setXml] = useState('');
  const [entityId, setEntityId] = useState('');
  const [ssoUrl, setSsoUrl] = useState('');
  const [certificate, setCertificate] = useState('');
  const [name, setName] = useState('');
  const [domain, setDomain] = useState('');
  const [organizationId, setOrganizationId] = useState('');
  const [idpInitiated, setIdpInitiated] = useState(false);
  const [enabled, setEnabled] = useState(true);
  const created = async (connection: SamlConnection) => {
    await queryClient.invalidateQueries({ queryKey: trpc.saml.connections.list.queryKey() });
    await navigate({ to: '/apps/$appId/sign-in/sso/$connectionId', params: { appId, connectionId: connection.id } });
  };
  const fromMetadata = useMutation(trpc.saml.connections.createFromMetadata.mutationOptions({ onSuccess: created }));
  const byHand = useMutation(trpc.saml.connections.create.mutationOptions({ onSuccess: created }));
  const pending = fromMetadata.isPending || byHand.isPending;
  const common = {
    name: optional(name),
    email_domain: optional(domain),
    organization_id: optional(organizationId),
    allow_idp_initiated: idpInitiated,
    enabled,
  };

  return (
    <section className="panel" aria-labelledby="create-connection">
      <h2 id="create-connection">Add a connection</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          if (source === 'manual') {
            byHand.mutate({
              ...common,
              name: common.name ?? entityId.trim(),
              idp_entity_id: entityId,
              idp_sso_url: ssoUrl,
              idp_certificate: certificateBase64(certificate),
            });
          } else if (source === 'url') {
            fromMetadata.mutate({ ...common, metadata_url: url.trim() });
          } else {
            const metadata = source === 'file' ? file?.xml : xml;
            if (metadata) fromMetadata.mutate({ ...common, metadata_xml: metadata });
          }
        }}
      >
        <RadioGroup
          className="field"
          value={source}
          onChange={(value) => {
            const next = SSO_SOURCES.find((s) => s === value);
            void navigate({ search: (prev) => ({ ...prev, source: next === 'file' ? undefined : next }), replace: true });
          }}
        >
          <Label>From</Label>
          <div className="radios segmented">
            {SSO_SOURCES.map((s) => (
              <Radio key={s} value={s}>
                {SOURCE_LABELS[s]}
              </Radio>
            ))}
          </div>
        </RadioGroup>
        {source === 'file' && (
          <div className="field">
            <label htmlFor={fileId}>The IdP's metadata file (XML)</label>
            <input
              id={fileId}
              type="file"
              accept=".xml,application/xml,text/xml,application/samlmetadata+xml"
              required
              aria-describedby={`${fileId}-help`}
              onChange={(event) => {
                const chosen = event.currentTarget.files?.[0];
                setFile(null);
                setFileError(null);
                if (!chosen) return;
                // Read here, in the browser: only its text is sent, as metadata_xml.
                chosen.text().then(
                  (text) => setFile({ name: chosen.name, xml: text }),
                  () => setFileError(`${chosen.name} could not be read.`),
                );
              }}
            />
            <span id={`${fileId}-help`} className="description">
              Download it from the IdP's SAML application (often called "IdP metadata" or "Federation metadata").
            </span>
            {fileError && (
              <span className="notice error" role="alert">
                {fileError}
              </span>
            )}
          </div>
        )}
        {source === 'url' && (
          <TextField className="field" type="url" isRequired value={url} onChange={setUrl} maxLength={2048}>
            <Label>Metadata URL</Label>
            <Input placeholder="https://idp.acme.com/metadata.xml" />
            <Text slot="description">Gatehouse fetches it once, now (https only).</Text>
          </TextField>
        )}
        {source === 'xml' && (
          <TextField className="field" isRequired value={xml} onChange={setXml}>
            <Label>Metadata XML</Label>
            <TextArea rows={6} spellCheck={false} />
            <Text slot="description">The IdP's EntityDescriptor, as it publishes it.</Text>
          </TextField>
        )}
        {source === 'manual' && (
          <>
            <TextField className="field" isRequired value={entityId} onChange={setEntityId} maxLength={1024}>
              <Label>IdP entity id (issuer)</Label>
              <Input placeholder="https://idp.acme.com/saml/metadata" />
            </TextField>
            <TextField className="field" type="url" isRequired value={ssoUrl} onChange={setSsoUrl} maxLength={2048}>
              <Label>IdP sign-in URL (SSO URL)</Label>
              <Input placeholder="https://idp.acme.com/saml/sso" />
            </TextField>
            <TextField className="field" isRequired value={certificate} onChange={setCertificate}>
              <Label>IdP signing certificate</Label>
              <TextArea rows={5} spellCheck={false} />
              <Text slot="description">PEM (-----BEGIN CERTIFICATE-----…) or its base64. It is never shown back.</Text>
            </TextField>
          </>
        )}
        <TextField className="field" value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input placeholder="Acme" />
          <Text slot="description">
            {source === 'manual' ? "Defaults to the IdP's entity id." : "Defaults to the IdP's entity id in the metadata."}
          </Text>
        </TextField>
        <TextField className="field" value={domain} onChange={setDomain} maxLength={253}>
          <Label>Email domain</Label>
          <Input placeholder="acme.com" />
          <Text slot="description">People whose email is in this domain sign in through this connection.</Text>
        </TextField>
        <TextField className="field" value={organizationId} onChange={setOrganizationId} maxLength={36}>
          <Label>Organization id</Label>
          <Input placeholder="leave empty for the whole application" />
          <Text slot="description">
            The organization whose identity provider this is: it also vouches for the domains that organization verified.
          </Text>
        </TextField>
        <Checkbox className="checkbox" isSelected={idpInitiated} onChange={setIdpInitiated}>
          Allow sign-in started from the IdP's own portal (IdP-initiated)
        </Checkbox>
        <Checkbox className="checkbox" isSelected={enabled} onChange={setEnabled}>
          Enabled
        </Checkbox>
        <Button type="submit" className="button primary" isDisabled={pending || (source === 'file' && file === null)}>
          {pending ? 'Adding…' : 'Add the connection'}
        </Button>
      </Form>
      <ErrorNotice error={fromMetadata.error ?? byHand.error} title="The connection was not added" />
    </section>
  );
}
