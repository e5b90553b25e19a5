import { SCOPES } from '@gatehouse/api/scopes';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Button, Checkbox, CheckboxGroup, Form, Input, Label, Text, TextField } from 'react-aria-components';
import { app } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { when } from '../format.ts';

/** The application's secret keys: list, create with a scope picker (the secret shown once), revoke. */
export function ApiKeysPage() {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const keys = useQuery(trpc.apiKeys.list.queryOptions());
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() }),
    }),
  );

  return (
    <section>
      <h1>API keys</h1>
      <p>Secret keys let your servers call Gatehouse for this application. Keep them out of browsers and repositories.</p>
      {keys.isPending && <p role="status">Loading the keys…</p>}
      <ErrorNotice error={keys.error} title="The keys could not be listed" />
      <ErrorNotice error={revoke.error} title="The key was not revoked" />
      {keys.data && (
        <ListTable
          caption="Secret keys"
          columns={['Name', 'Starts with', 'Scopes', 'Created', 'Last used']}
          actions="Actions"
          rows={keys.data}
          rowKey={(key) => key.id}
          empty={
            <EmptyState
              title="No API key"
              cli="npx gatehouse api-keys create backend --scope users:read users:write"
              curl={curl('/v1/api-keys', {
                method: 'POST',
                body: '{"name": "backend", "scopes": ["users:read", "users:write"]}',
              })}
            />
          }
        >
          {(key) => (
            <>
              <td>{key.name}</td>
              <td>
                <code>{key.prefix}…</code>
              </td>
              <td>{key.scopes.join(' ')}</td>
              <td>{when(key.created_at)}</td>
              <td>{when(key.last_used_at)}</td>
              <td>
                {key.revoked_at ? (
                  <span className="badge">revoked {when(key.revoked_at)}</span>
                ) : (
                  <ConfirmButton
                    label="Revoke"
                    ariaLabel={`Revoke the key ${key.name}`}
                    title={`Revoke ${key.name}?`}
                    confirmLabel="Revoke the key"
                    isDisabled={revoke.isPending}
                    onConfirm={() => revoke.mutate({ id: key.id })}
                  >
                    <p>Calls made with it fail at once. This cannot be undone.</p>
                  </ConfirmButton>
                )}
              </td>
            </>
          )}
        </ListTable>
      )}
      <CreateKey />
    </section>
  );
}

function CreateKey() {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>([]);
  const create = useMutation(
    trpc.apiKeys.create.mutationOptions({
      onSuccess: () => {
        setName('');
        setScopes([]);
        void queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-key">
      <h2 id="create-key">Create a key</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({ name, scopes });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input placeholder="backend" />
        </TextField>
        <CheckboxGroup className="field scopes" value={scopes} onChange={setScopes} isRequired>
          <Label>Scopes</Label>
          <Text slot="description">A :write scope includes its :read; * grants everything.</Text>
          <div className="scope-grid">
            {SCOPES.map((scope) => (
              <Checkbox key={scope} value={scope} className="checkbox">
                <code>{scope}</code>
              </Checkbox>
            ))}
          </div>
        </CheckboxGroup>
        <Button type="submit" className="button primary" isDisabled={create.isPending || scopes.length === 0}>
          {create.isPending ? 'Creating…' : 'Create the key'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The key was not created" />
      {create.data && (
        <div className="notice success" role="status">
          <p className="notice-title">Key “{create.data.name}” created. Copy its secret now: it is never shown again.</p>
          <p className="secret">
            <code>{create.data.secret}</code> <CopyButton value={create.data.secret} label="Copy the secret key" />
          </p>
        </div>
      )}
    </section>
  );
}
