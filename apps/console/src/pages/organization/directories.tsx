import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, TextField } from 'react-aria-components';
import { app, type Outputs } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { CopyButton } from '../../components/copy-button.tsx';
import { curl, EmptyState } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { when } from '../../format.ts';

type Directory = Outputs['organizations']['directories']['list'][number];
type Provider = Directory['provider'];

const PROVIDERS: Array<{ id: Provider; name: string }> = [
  { id: 'okta', name: 'Okta' },
  { id: 'entra', name: 'Microsoft Entra ID' },
  { id: 'google', name: 'Google Workspace' },
  { id: 'generic', name: 'Another SCIM 2.0 provider' },
];
const providerName = (id: Provider) => PROVIDERS.find((p) => p.id === id)?.name ?? id;

/** What the identity provider is given: shown once, after a directory is created or its token rotated. */
interface Handover {
  name: string;
  baseUrl: string;
  token: string;
  rotated: boolean;
}

/**
 * The organization's SCIM directories: create one (its base URL and bearer token, the token shown once), rotate the
 * token (shown once again), disable or enable, delete; the users and groups each holds and its last request.
 */
export function Directories({ orgId }: { orgId: string }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const directories = useQuery(trpc.organizations.directories.list.queryOptions({ id: orgId }));
  const [handover, setHandover] = useState<Handover | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.organizations.directories.pathKey() });
  const update = useMutation(trpc.organizations.directories.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(
    trpc.organizations.directories.delete.mutationOptions({
      onSuccess: () => {
        setHandover(null);
        return refresh();
      },
    }),
  );
  const rotate = useMutation(trpc.organizations.directories.rotateToken.mutationOptions());

  return (
    <div>
      <h2>Directories</h2>
      <p>
        A directory lets the organization's identity provider keep its member list over SCIM: give its IT administrator the base
        URL and the token.
      </p>
      {directories.isPending && <p role="status">Loading the directories…</p>}
      <ErrorNotice error={directories.error} title="The directories could not be listed" />
      <ErrorNotice error={update.error} title="The directory was not changed" />
      <ErrorNotice error={remove.error} title="The directory was not deleted" />
      <ErrorNotice error={rotate.error} title="The token was not rotated" />
      {handover && <HandoverNotice {...handover} />}
      {directories.data && (
        <ListTable
          caption="SCIM directories, newest first"
          columns={['Name', 'Provider', 'Status', 'Users', 'Groups', 'Last request']}
          actions="Actions"
          rows={directories.data}
          rowKey={(d) => d.id}
          empty={
            <EmptyState
              title="No directory yet"
              cli={`npx gatehouse orgs directories create ${orgId} --name "Acme Okta" --provider okta`}
              curl={curl(`/v1/organizations/${orgId}/directories`, {
                method: 'POST',
                body: '{"name": "Acme Okta", "provider": "okta"}',
              })}
            />
          }
        >
          {(d) => (
            <>
              <td>
                {d.name}
                <div className="meta">
                  <code>{d.scim_base_url}</code>{' '}
                  <CopyButton value={d.scim_base_url} label={`Copy the SCIM base URL of ${d.name}`} />
                </div>
              </td>
              <td>{providerName(d.provider)}</td>
              <td>
                <span className="badge">{d.status}</span>
              </td>
              <td>{d.user_count}</td>
              <td>{d.group_count}</td>
              <td>{when(d.last_request_at, 'never')}</td>
              <td>
                <div className="row-actions">
                  <ConfirmButton
                    label="Rotate token"
                    ariaLabel={`Rotate token of ${d.name}`}
                    title={`Rotate the token of ${d.name}?`}
                    confirmLabel="Rotate the token"
                    isDisabled={rotate.isPending}
                    onConfirm={() =>
                      rotate.mutate(
                        { id: orgId, directory_id: d.id },
                        {
                          onSuccess: ({ token }) => setHandover({ name: d.name, baseUrl: d.scim_base_url, token, rotated: true }),
                        },
                      )
                    }
                  >
                    <p>The current token stops working at once: the identity provider needs the new one.</p>
                  </ConfirmButton>
                  <Button
                    className="button small"
                    aria-label={`${d.status === 'active' ? 'Disable' : 'Enable'} ${d.name}`}
                    isDisabled={update.isPending}
                    onPress={() =>
                      update.mutate({ id: orgId, directory_id: d.id, status: d.status === 'active' ? 'disabled' : 'active' })
                    }
                  >
                    {d.status === 'active' ? 'Disable' : 'Enable'}
                  </Button>
                  <ConfirmButton
                    label="Delete"
                    ariaLabel={`Delete ${d.name}`}
                    title={`Delete ${d.name}?`}
                    confirmLabel="Delete the directory"
                    isDisabled={remove.isPending}
                    onConfirm={() => remove.mutate({ id: orgId, directory_id: d.id })}
                  >
                    <p>
                      Its users and groups are forgotten and its token stops working. The memberships it made stay. This cannot be
                      undone.
                    </p>
                  </ConfirmButton>
                </div>
              </td>
            </>
          )}
        </ListTable>
      )}
      <CreateDirectory
        orgId={orgId}
        onCreated={(d) => setHandover({ name: d.name, baseUrl: d.scim_base_url, token: d.token, rotated: false })}
      />
    </div>
  );
}

function HandoverNotice({ name, baseUrl, token, rotated }: Handover) {
  return (
    <div className="notice success" role="status">
      <p className="notice-title">
        {rotated ? `New token of ${name}` : `Directory ${name} created`}. Copy its token now: it is never shown again.
      </p>
      <dl className="facts">
        <dt>SCIM base URL</dt>
        <dd className="secret">
          <code>{baseUrl}</code> <CopyButton value={baseUrl} label="Copy the SCIM base URL" />
        </dd>
        <dt>Bearer token</dt>
        <dd className="secret">
          <code>{token}</code> <CopyButton value={token} label="Copy the SCIM token" />
        </dd>
      </dl>
    </div>
  );
}

function CreateDirectory({
  orgId,
  onCreated,
}: {
  orgId: string;
  onCreated: (d: Outputs['organizations']['directories']['create']) => void;
}) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [provider, setProvider] = useState<Provider>('okta');
  const create = useMutation(
    trpc.organizations.directories.create.mutationOptions({
      onSuccess: (created) => {
        setName('');
        onCreated(created);
        return queryClient.invalidateQueries({ queryKey: trpc.organizations.directories.list.queryKey({ id: orgId }) });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-directory">
      <h3 id="create-directory">Create a directory</h3>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({ id: orgId, name: name.trim(), provider });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input placeholder="Acme Okta" />
        </TextField>
        <RadioGroup
          className="field radios"
          isRequired
          value={provider}
          onChange={(value) => setProvider(PROVIDERS.find((p) => p.id === value)?.id ?? 'generic')}
        >
          <Label>Identity provider</Label>
          {PROVIDERS.map((p) => (
            <Radio key={p.id} value={p.id}>
              {p.name}
            </Radio>
          ))}
        </RadioGroup>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create the directory'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The directory was not created" />
    </section>
  );
}
