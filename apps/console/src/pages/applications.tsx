import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, SearchField, TextField } from 'react-aria-components';
import { operator } from '../api.ts';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { splitList } from '../format.ts';
import { refreshSession, useSession } from '../session.ts';

/**
 * The applications this operator may open (the session's list, each with the operator's role there), a filter kept in
 * the URL, and the form that creates one. Creating is the instance owners' (the server says so to anyone else).
 */
export function ApplicationsPage() {
  const session = useSession();
  const { q } = useSearch({ from: '/apps' });
  const navigate = useNavigate({ from: '/apps' });
  const all = session?.applications ?? [];
  const needle = q?.toLowerCase();
  const shown = needle ? all.filter((a) => a.name.toLowerCase().includes(needle) || a.id.startsWith(needle)) : all;

  return (
    <section>
      <h1>Applications</h1>
      {all.length > 0 && (
        <SearchField
          className="field search"
          defaultValue={q ?? ''}
          onChange={(value) => void navigate({ search: { q: value || undefined }, replace: true })}
        >
          <Label>Filter by name or id</Label>
          <Input />
        </SearchField>
      )}
      {all.length === 0 ? (
        <EmptyState
          title="No application yet"
          cli={'npx gatehouse apps create "My app" --origin http://localhost:3000'}
          curl={curl('/v1/applications', {
            method: 'POST',
            body: '{"name": "My app", "allowed_origins": ["http://localhost:3000"]}',
            operator: true,
          })}
        >
          <p>Create your first application below, or ask an instance owner to give you a role in one.</p>
        </EmptyState>
      ) : (
        <ListTable
          caption="Your applications"
          columns={['Name', 'Environment', 'Your role', 'Id']}
          rows={shown}
          rowKey={(a) => a.id}
          noMatch={
            <tr>
              <td colSpan={4}>No application matches “{q}”.</td>
            </tr>
          }
        >
          {(a) => (
            <>
              <td>
                <Link to="/apps/$appId/dashboard" params={{ appId: a.id }}>
                  {a.name}
                </Link>
              </td>
              <td>
                <span className={`badge ${a.environment}`}>{a.environment}</span>
              </td>
              <td>{a.role}</td>
              <td>
                <code>{a.id}</code>
              </td>
            </>
          )}
        </ListTable>
      )}
      <CreateApplication />
    </section>
  );
}

function CreateApplication() {
  const trpc = operator.useTRPC();
  const [name, setName] = useState('');
  const [environment, setEnvironment] = useState<'development' | 'production'>('development');
  const [origins, setOrigins] = useState('');
  const create = useMutation(
    trpc.applications.create.mutationOptions({
      onSuccess: () => {
        setName('');
        setOrigins('');
        void refreshSession();
      },
    }),
  );
  const created = create.data;

  return (
    <section className="panel" aria-labelledby="create-application">
      <h2 id="create-application">Create an application</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({
            name,
            environment,
            allowed_origins: splitList(origins),
          });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input />
        </TextField>
        <RadioGroup
          className="field radios"
          value={environment}
          onChange={(value) => setEnvironment(value === 'production' ? 'production' : 'development')}
        >
          <Label>Environment</Label>
          <Radio value="development">Development (sk_test_ keys)</Radio>
          <Radio value="production">Production (sk_live_ keys)</Radio>
        </RadioGroup>
        <TextField className="field" value={origins} onChange={setOrigins}>
          <Label>Allowed origins (optional, separated by spaces)</Label>
          <Input placeholder="https://app.example.com" />
        </TextField>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create the application'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The application was not created" />
      {created && (
        <div className="notice success" role="status">
          <p className="notice-title">
            Created{' '}
            <Link to="/apps/$appId/dashboard" params={{ appId: created.application.id }}>
              {created.application.name}
            </Link>
            .
          </p>
          <p>Its first secret key is shown once: copy it now.</p>
          <p className="secret">
            <code>{created.secret_key.secret}</code>{' '}
            <CopyButton value={created.secret_key.secret} label="Copy the application's first secret key" />
          </p>
        </div>
      )}
    </section>
  );
}
