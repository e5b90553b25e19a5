import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Checkbox, Form, Input, Label, SearchField, TextField } from 'react-aria-components';
import { app } from '../api.ts';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { PAGE_SIZE } from '../search.ts';

/** The application's users, newest first: a search by email and server paging, both in the URL; and creating one. */
export function UsersPage() {
  const { appId } = useParams({ from: '/apps/$appId/users/' });
  const { q, offset = 0 } = useSearch({ from: '/apps/$appId/users/' });
  const navigate = useNavigate({ from: '/apps/$appId/users/' });
  const trpc = app.useTRPC();
  const users = useQuery({
    ...trpc.users.list.queryOptions({ search: q, limit: PAGE_SIZE, offset }),
    // The previous page stays on screen while the next one loads: no flash of an empty table.
    placeholderData: keepPreviousData,
  });
  const page = users.data;

  return (
    <section>
      <h1>Users</h1>
      <SearchField
        className="field search"
        defaultValue={q ?? ''}
        onChange={(value) => void navigate({ search: { q: value || undefined, offset: undefined }, replace: true })}
      >
        <Label>Search by email</Label>
        <Input />
      </SearchField>
      <ErrorNotice error={users.error} title="The users could not be listed" />
      {users.isPending && <p role="status">Loading the users…</p>}
      {page && page.total === 0 && !q && (
        <EmptyState
          title="No user yet"
          cli="npx gatehouse users create --email ada@example.com"
          curl={curl('/v1/users', { method: 'POST', body: '{"primary_email": "ada@example.com"}' })}
        />
      )}
      {page && page.total === 0 && q && <p role="status">No user's email contains “{q}”.</p>}
      {page && page.users.length > 0 && (
        <ListTable
          caption="Users"
          columns={['Email', 'Status', 'Verified', 'Created']}
          rows={page.users}
          rowKey={(user) => user.id}
          busy={users.isFetching}
          pager={{ label: 'Pages of users', offset: page.offset, total: page.total }}
        >
          {(user) => (
            <>
              <td>
                <Link to="/apps/$appId/users/$userId" params={{ appId, userId: user.id }}>
                  {user.primary_email ?? user.id}
                </Link>
              </td>
              <td>
                <span className={`badge ${user.status}`}>{user.status}</span>
              </td>
              <td>{user.email_verified ? 'yes' : 'no'}</td>
              <td>{new Date(user.created_at).toLocaleString()}</td>
            </>
          )}
        </ListTable>
      )}
      <CreateUser appId={appId} />
    </section>
  );
}

function CreateUser({ appId }: { appId: string }) {
  const trpc = app.useTRPC();
  const navigate = useNavigate();
  const [email, setEmail] = useState('');
  const [verified, setVerified] = useState(false);
  const create = useMutation(
    trpc.users.create.mutationOptions({
      onSuccess: (user) => navigate({ to: '/apps/$appId/users/$userId', params: { appId, userId: user.id } }),
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-user">
      <h2 id="create-user">Create a user</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({ primary_email: email, email_verified: verified });
        }}
      >
        <TextField className="field" type="email" isRequired value={email} onChange={setEmail} maxLength={320}>
          <Label>Email</Label>
          <Input />
        </TextField>
        <Checkbox className="checkbox" isSelected={verified} onChange={setVerified}>
          The address is verified
        </Checkbox>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create the user'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The user was not created" />
    </section>
  );
}
