import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextArea, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { splitList, when } from '../format.ts';

type OAuthClient = Outputs['oauth2']['clients']['list'][number];
type ClientWithSecret = Outputs['oauth2']['clients']['create'];

/** One URI (or scope) per line, or separated by spaces or commas. */

/**
 * The clients of the application's own OpenID provider: other apps that sign people in with this application. List,
 * create (the secret shown once), edit (`?client=`), rotate a confidential client's secret, delete.
 */
export function OAuthClientsPage() {
  const { appId } = useParams({ from: '/apps/$appId/sign-in/oauth-clients' });
  const { client: selected } = useSearch({ from: '/apps/$appId/sign-in/oauth-clients' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const clients = useQuery(trpc.oauth2.clients.list.queryOptions());
  const [secret, setSecret] = useState<{ client: ClientWithSecret; rotated: boolean } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.oauth2.clients.list.queryKey() });
  const remove = useMutation(trpc.oauth2.clients.delete.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(
    trpc.oauth2.clients.rotateSecret.mutationOptions({ onSuccess: (client) => setSecret({ client, rotated: true }) }),
  );
  const current = clients.data?.find((c) => c.id === selected);
  // The application's issuer on the server's own address (the console is served at {base}/console/).
  const issuer = `${location.origin}/oauth2/${appId}`;
  const discovery = `${issuer}/.well-known/openid-configuration`;

  return (
    <section>
      <h1>OAuth clients</h1>
      <p>
        This application is also an OpenID provider: other apps can offer "Sign in with" it. Each app is a client here, with the
        exact addresses it may send people back to.
      </p>
      <dl className="facts copyable">
        <dt>Issuer</dt>
        <dd>
          <code>{issuer}</code> <CopyButton value={issuer} label="Copy the issuer" />
        </dd>
        <dt>Discovery document</dt>
        <dd>
          <code>{discovery}</code> <CopyButton value={discovery} label="Copy the discovery URL" />
        </dd>
      </dl>
      {clients.isPending && <p role="status">Loading the clients…</p>}
      <ErrorNotice error={clients.error} title="The clients could not be listed" />
      <ErrorNotice error={remove.error} title="The client was not deleted" />
      <ErrorNotice error={rotate.error} title="The secret was not rotated" />
      {secret && <SecretNotice {...secret} />}
      {clients.data && (
        <ListTable
          caption="OAuth clients, newest first"
          columns={['Name', 'Client id', 'Type', 'Redirect URIs', 'Scopes', 'Created']}
          actions="Actions"
          rows={clients.data}
          rowKey={(c) => c.id}
          current={(c) => c.id === selected}
          className="break-code"
          empty={
            <EmptyState
              title="No OAuth client"
              cli="npx gatehouse oauth2 clients create --name 'Partner app' --redirect-uri https://partner.example.com/callback"
              curl={curl('/v1/oauth2/clients', {
                method: 'POST',
                body: '{"name": "Partner app", "type": "confidential", "redirect_uris": ["https://partner.example.com/callback"]}',
              })}
            />
          }
        >
          {(c) => (
            <>
              <td>
                {c.name}
                {c.dynamic && <span className="badge">registered itself</span>}
              </td>
              <td>
                <code>{c.id}</code> <CopyButton value={c.id} label={`Copy the client id of ${c.name}`} />
              </td>
              <td>{c.type}</td>
              <td>
                <ul className="plain">
                  {c.redirect_uris.map((uri) => (
                    <li key={uri}>
                      <code>{uri}</code>
                    </li>
                  ))}
                </ul>
              </td>
              <td>{c.scopes.join(' ')}</td>
              <td>{when(c.created_at)}</td>
              <td className="row-actions">
                <Link
                  from="/apps/$appId/sign-in/oauth-clients"
                  search={{ client: c.id }}
                  className="button small"
                  aria-label={`Edit ${c.name}`}
                >
                  Edit
                </Link>
                {c.type === 'confidential' && (
                  <ConfirmButton
                    label="Rotate secret"
                    ariaLabel={`Rotate secret of ${c.name}`}
                    title={`Rotate the secret of ${c.name}?`}
                    confirmLabel="Rotate the secret"
                    isDisabled={rotate.isPending}
                    onConfirm={() => rotate.mutate({ id: c.id })}
                  >
                    <p>The current secret stops working at once: give the new one to the app.</p>
                  </ConfirmButton>
                )}
                <ConfirmButton
                  label="Delete"
                  ariaLabel={`Delete ${c.name}`}
                  title={`Delete ${c.name}?`}
                  confirmLabel="Delete the client"
                  isDisabled={remove.isPending}
                  onConfirm={() => remove.mutate({ id: c.id })}
                >
                  <p>What people authorized it to do is revoked, with its tokens. This cannot be undone.</p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
      {current && <EditClient key={current.updated_at} client={current} />}
      {selected && clients.data && !current && <p role="status">That client no longer exists.</p>}
      <CreateClient onCreated={(client) => setSecret({ client, rotated: false })} />
    </section>
  );
}

function SecretNotice({ client, rotated }: { client: ClientWithSecret; rotated: boolean }) {
  return (
    <div className="notice success" role="status">
      <p className="notice-title">
        {rotated ? `New secret of ${client.name}.` : `Client “${client.name}” created.`}
        {client.client_secret ? ' Copy its secret now: it is never shown again.' : ' A public client has no secret.'}
      </p>
      <p className="secret">
        client id <code>{client.id}</code> <CopyButton value={client.id} label="Copy the new client id" />
      </p>
      {client.client_secret && (
        <p className="secret">
          secret <code>{client.client_secret}</code> <CopyButton value={client.client_secret} label="Copy the client secret" />
        </p>
      )}
    </div>
  );
}

function CreateClient({ onCreated }: { onCreated: (client: ClientWithSecret) => void }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [type, setType] = useState<'confidential' | 'public'>('confidential');
  const [redirects, setRedirects] = useState('');
  const [postLogout, setPostLogout] = useState('');
  const [scopes, setScopes] = useState('openid email profile');
  const create = useMutation(
    trpc.oauth2.clients.create.mutationOptions({
      onSuccess: (created) => {
        setName('');
        setRedirects('');
        setPostLogout('');
        onCreated(created);
        void queryClient.invalidateQueries({ queryKey: trpc.oauth2.clients.list.queryKey() });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-client">
      <h2 id="create-client">Add a client</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({
            name,
            type,
            redirect_uris: splitList(redirects),
            post_logout_redirect_uris: splitList(postLogout),
            scopes: splitList(scopes),
          });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input placeholder="Partner app" />
          <Text slot="description">People see it on the consent page.</Text>
        </TextField>
        <RadioGroup className="field radios" value={type} onChange={(v) => setType(v === 'public' ? 'public' : 'confidential')}>
          <Label>Type</Label>
          <Radio value="confidential">Confidential: a server, which keeps a secret</Radio>
          <Radio value="public">Public: a browser or mobile app, a CLI (PKCE, no secret)</Radio>
        </RadioGroup>
        <UriFields redirects={redirects} setRedirects={setRedirects} postLogout={postLogout} setPostLogout={setPostLogout} />
        <TextField className="field" value={scopes} onChange={setScopes}>
          <Label>Scopes</Label>
          <Input />
          <Text slot="description">What the client may ask for, separated by spaces.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Adding…' : 'Add the client'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The client was not added" />
    </section>
  );
}

function UriFields({
  redirects,
  setRedirects,
  postLogout,
  setPostLogout,
}: {
  redirects: string;
  setRedirects: (value: string) => void;
  postLogout: string;
  setPostLogout: (value: string) => void;
}) {
  return (
    <>
      <TextField className="field" isRequired value={redirects} onChange={setRedirects}>
        <Label>Redirect URIs</Label>
        <TextArea rows={3} spellCheck={false} placeholder="https://partner.example.com/callback" />
        <Text slot="description">
          One per line, matched exactly: https, http://127.0.0.1 for a native app, or an app scheme (com.example.app:/callback).
        </Text>
      </TextField>
      <TextField className="field" value={postLogout} onChange={setPostLogout}>
        <Label>Post-logout redirect URIs</Label>
        <TextArea rows={2} spellCheck={false} />
        <Text slot="description">Where signing out may send people back to, one per line (optional).</Text>
      </TextField>
    </>
  );
}

/** A client's settings; its type cannot change (a public client has no secret to start from). */
function EditClient({ client }: { client: OAuthClient }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const navigate = useNavigate({ from: '/apps/$appId/sign-in/oauth-clients' });
  const [name, setName] = useState(client.name);
  const [redirects, setRedirects] = useState(client.redirect_uris.join('\n'));
  const [postLogout, setPostLogout] = useState(client.post_logout_redirect_uris.join('\n'));
  const [scopes, setScopes] = useState(client.scopes.join(' '));
  const [logo, setLogo] = useState(client.logo_url ?? '');
  const close = () => void navigate({ search: {} });
  const update = useMutation(
    trpc.oauth2.clients.update.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.oauth2.clients.list.queryKey() });
        close();
      },
    }),
  );
  return (
    <Form
      className="panel"
      aria-labelledby="edit-client"
      onSubmit={(event) => {
        event.preventDefault();
        update.mutate({
          id: client.id,
          name,
          redirect_uris: splitList(redirects),
          post_logout_redirect_uris: splitList(postLogout),
          scopes: splitList(scopes),
          logo_url: logo.trim() === '' ? null : logo.trim(),
        });
      }}
    >
      <h2 id="edit-client">Edit {client.name}</h2>
      <p className="meta">
        {client.type} client <code>{client.id}</code>
      </p>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Name</Label>
        <Input />
      </TextField>
      <UriFields redirects={redirects} setRedirects={setRedirects} postLogout={postLogout} setPostLogout={setPostLogout} />
      <TextField className="field" value={scopes} onChange={setScopes}>
        <Label>Scopes</Label>
        <Input />
      </TextField>
      <TextField className="field" type="url" value={logo} onChange={setLogo} maxLength={2048}>
        <Label>Logo URL</Label>
        <Input />
        <Text slot="description">Shown on the consent page (optional).</Text>
      </TextField>
      <div className="actions">
        <Button type="submit" className="button primary" isDisabled={update.isPending}>
          {update.isPending ? 'Saving…' : 'Save the client'}
        </Button>
        <Button className="button" onPress={close}>
          Cancel
        </Button>
      </div>
      <ErrorNotice error={update.error} title="The client was not saved" />
    </Form>
  );
}
