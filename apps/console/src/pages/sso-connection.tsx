import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Checkbox, Form, Input, Label, Text, TextArea, TextField } from 'react-aria-components';
import { app } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { when } from '../format.ts';
import { CertificateExpiry, certificateBase64, OrganizationName, type SamlConnection } from './sso-connections.tsx';

/** The NameID format to ask the IdP for: the first our SP metadata lists (an email address). */
const NAME_ID_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';
const POST_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST';

/** One SAML connection: the values to give the IdP, what we know of the IdP, enable or disable, edit (`?edit=`), delete. */
export function SsoConnectionPage() {
  const { appId, connectionId } = useParams({ from: '/apps/$appId/sign-in/sso/$connectionId' });
  const { edit } = useSearch({ from: '/apps/$appId/sign-in/sso/$connectionId' });
  const navigate = useNavigate({ from: '/apps/$appId/sign-in/sso/$connectionId' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const connection = useQuery(trpc.saml.connections.get.queryOptions({ id: connectionId }));
  const saved = (c: SamlConnection) => {
    queryClient.setQueryData(trpc.saml.connections.get.queryKey({ id: c.id }), c);
    void queryClient.invalidateQueries({ queryKey: trpc.saml.connections.list.queryKey() });
  };
  const enable = useMutation(trpc.saml.connections.enable.mutationOptions({ onSuccess: saved }));
  const disable = useMutation(trpc.saml.connections.disable.mutationOptions({ onSuccess: saved }));
  const remove = useMutation(
    trpc.saml.connections.delete.mutationOptions({
      onSuccess: async () => {
        queryClient.removeQueries({ queryKey: trpc.saml.connections.get.queryKey({ id: connectionId }) });
        // The list is not on screen (not refetched now): drop the connection from its cached copy, so the list never
        // shows it again while its refetch is on the way.
        queryClient.setQueryData(trpc.saml.connections.list.queryKey(), (list) => list?.filter((c) => c.id !== connectionId));
        await queryClient.invalidateQueries({ queryKey: trpc.saml.connections.list.queryKey() });
        await navigate({ to: '/apps/$appId/sign-in/sso', params: { appId }, search: {} });
      },
    }),
  );
  const c = connection.data;

  return (
    <section>
      <p>
        <Link to="/apps/$appId/sign-in/sso" params={{ appId }}>
          ← All SSO connections
        </Link>
      </p>
      <h1>
        {c?.name ?? 'SSO connection'}
        {c && <span className={`badge ${c.enabled ? 'active' : 'disabled'}`}>{c.enabled ? 'enabled' : 'disabled'}</span>}
      </h1>
      {connection.isPending && <p role="status">Loading the connection…</p>}
      <ErrorNotice error={connection.error} title="The connection could not be read" />
      <ErrorNotice error={enable.error ?? disable.error} title="The connection was not changed" />
      <ErrorNotice error={remove.error} title="The connection was not deleted" />
      {c && (
        <>
          <div className="row-actions">
            <Button
              className="button"
              isDisabled={enable.isPending || disable.isPending}
              onPress={() => (c.enabled ? disable : enable).mutate({ id: c.id })}
            >
              {c.enabled ? 'Disable the connection' : 'Enable the connection'}
            </Button>
            {!edit && (
              <Link from="/apps/$appId/sign-in/sso/$connectionId" search={{ edit: true }} className="button">
                Edit
              </Link>
            )}
            <ConfirmButton
              label="Delete"
              ariaLabel={`Delete ${c.name}`}
              title={`Delete ${c.name}?`}
              confirmLabel="Delete the connection"
              isDisabled={remove.isPending}
              onConfirm={() => remove.mutate({ id: c.id })}
            >
              <p>Its people can no longer sign in through it; their accounts stay. This cannot be undone.</p>
            </ConfirmButton>
          </div>
          {!c.enabled && (
            <p className="notice" role="note">
              This connection is disabled: every sign-in through it is refused until it is enabled.
            </p>
          )}
          <section className="panel" aria-labelledby="for-the-idp">
            <h2 id="for-the-idp">Give these to the IdP</h2>
            <p>
              In the identity provider, create a SAML application with these values, or give it the metadata URL alone if it can
              read one.
            </p>
            <dl className="facts copyable">
              <IdpValue label="ACS URL (Reply URL)" value={c.acs_url} />
              <IdpValue label="SP entity id (Audience)" value={c.metadata_url} />
              <IdpValue label="SP metadata URL" value={c.metadata_url} />
              <IdpValue label="ACS binding" value={POST_BINDING} />
              <IdpValue label="NameID format" value={NAME_ID_FORMAT} />
            </dl>
            <p className="description">
              Responses must be signed with the IdP's certificate below. The person's email is read from{' '}
              {c.email_attribute ? `the attribute ${c.email_attribute}` : 'a common email attribute, else the NameID'}.
            </p>
          </section>
          <section aria-labelledby="the-idp">
            <h2 id="the-idp">The identity provider</h2>
            <dl className="facts">
              <dt>IdP entity id</dt>
              <dd>
                <code>{c.idp_entity_id}</code>
              </dd>
              <dt>IdP sign-in URL</dt>
              <dd>
                <code>{c.idp_sso_url}</code>
              </dd>
              <dt>Certificate expires</dt>
              <dd>
                <CertificateExpiry expiresAt={c.certificate_expires_at} />
              </dd>
              <dt>Email domain</dt>
              <dd>{c.email_domain ?? 'none: the connection is found by its id only'}</dd>
              <dt>Organization</dt>
              <dd>
                <OrganizationName appId={appId} id={c.organization_id} />
              </dd>
              <dt>Email attribute</dt>
              <dd>{c.email_attribute ?? 'a common email attribute, else the NameID'}</dd>
              <dt>Name attribute</dt>
              <dd>{c.name_attribute ?? 'none'}</dd>
              <dt>IdP-initiated sign-in</dt>
              <dd>{c.allow_idp_initiated ? 'allowed' : 'refused'}</dd>
              <dt>Connection id</dt>
              <dd>
                <code>{c.id}</code>
              </dd>
              <dt>Created</dt>
              <dd>{when(c.created_at)}</dd>
              <dt>Changed</dt>
              <dd>{when(c.updated_at)}</dd>
            </dl>
          </section>
          {edit && (
            <EditConnection
              key={c.updated_at}
              connection={c}
              onDone={() => void navigate({ search: (prev) => ({ ...prev, edit: undefined }) })}
            />
          )}
        </>
      )}
    </section>
  );
}

function IdpValue({ label, value }: { label: string; value: string }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>
        <code>{value}</code> <CopyButton value={value} label={`Copy the ${label}`} />
      </dd>
    </>
  );
}

/** The connection's settings. The certificate is never shown back, so a change sends it again (the API wants it). */
function EditConnection({ connection, onDone }: { connection: SamlConnection; onDone: () => void }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState(connection.name);
  const [entityId, setEntityId] = useState(connection.idp_entity_id);
  const [ssoUrl, setSsoUrl] = useState(connection.idp_sso_url);
  const [certificate, setCertificate] = useState('');
  const [domain, setDomain] = useState(connection.email_domain ?? '');
  const [emailAttribute, setEmailAttribute] = useState(connection.email_attribute ?? '');
  const [nameAttribute, setNameAttribute] = useState(connection.name_attribute ?? '');
  const [organizationId, setOrganizationId] = useState(connection.organization_id ?? '');
  const [idpInitiated, setIdpInitiated] = useState(connection.allow_idp_initiated);
  const update = useMutation(
    trpc.saml.connections.update.mutationOptions({
      onSuccess: (saved) => {
        queryClient.setQueryData(trpc.saml.connections.get.queryKey({ id: saved.id }), saved);
        void queryClient.invalidateQueries({ queryKey: trpc.saml.connections.list.queryKey() });
        onDone();
      },
    }),
  );
  // An emptied optional field clears it (null); the API keeps a field that is left out.
  const orNull = (value: string) => (value.trim() === '' ? null : value.trim());

  return (
    <Form
      className="panel"
      aria-labelledby="edit-connection"
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({
          id: connection.id,
          name,
          idp_entity_id: entityId,
          idp_sso_url: ssoUrl,
          idp_certificate: certificateBase64(certificate),
          email_domain: orNull(domain),
          email_attribute: orNull(emailAttribute),
          name_attribute: orNull(nameAttribute),
          organization_id: orNull(organizationId),
          allow_idp_initiated: idpInitiated,
        });
      }}
    >
      <h2 id="edit-connection">Edit the connection</h2>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Name</Label>
        <Input />
      </TextField>
      <TextField className="field" isRequired value={entityId} onChange={setEntityId} maxLength={1024}>
        <Label>IdP entity id (issuer)</Label>
        <Input />
      </TextField>
      <TextField className="field" type="url" isRequired value={ssoUrl} onChange={setSsoUrl} maxLength={2048}>
        <Label>IdP sign-in URL (SSO URL)</Label>
        <Input />
      </TextField>
      <TextField className="field" isRequired value={certificate} onChange={setCertificate}>
        <Label>IdP signing certificate</Label>
        <TextArea rows={5} spellCheck={false} />
        <Text slot="description">
          The stored certificate is never shown: paste it again, or the IdP's new one (PEM or its base64).
        </Text>
      </TextField>
      <TextField className="field" value={domain} onChange={setDomain} maxLength={253}>
        <Label>Email domain</Label>
        <Input />
      </TextField>
      <TextField className="field" value={emailAttribute} onChange={setEmailAttribute} maxLength={256}>
        <Label>Email attribute</Label>
        <Input />
        <Text slot="description">Empty: a common email attribute, else the NameID.</Text>
      </TextField>
      <TextField className="field" value={nameAttribute} onChange={setNameAttribute} maxLength={256}>
        <Label>Name attribute</Label>
        <Input />
      </TextField>
      <TextField className="field" value={organizationId} onChange={setOrganizationId} maxLength={36}>
        <Label>Organization id</Label>
        <Input />
        <Text slot="description">
          Empty: a connection of the whole application. An organization's connection also vouches for the domains that
          organization verified.
        </Text>
      </TextField>
      <Checkbox className="checkbox" isSelected={idpInitiated} onChange={setIdpInitiated}>
        Allow sign-in started from the IdP's own portal (IdP-initiated)
      </Checkbox>
      <div className="actions">
        <Button type="submit" className="button primary" isDisabled={update.isPending}>
          {update.isPending ? 'Saving…' : 'Save the connection'}
        </Button>
        <Button className="button" onPress={onDone}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={update.error} title="The connection was not saved" />
    </Form>
  );
}
