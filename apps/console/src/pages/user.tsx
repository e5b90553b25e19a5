import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { Button, Tab, TabList, TabPanel, Tabs } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { USER_TABS, type UserTab } from '../search.ts';

type User = Outputs['users']['get'];

/**
 * One user: profile, status (ban and unban), live sessions (end one, or sign out everywhere), organizations and
 * factors; the tab is in the URL.
 */
export function UserPage() {
  const { appId, userId } = useParams({ from: '/apps/$appId/users/$userId' });
  const { tab = 'profile' } = useSearch({ from: '/apps/$appId/users/$userId' });
  const navigate = useNavigate({ from: '/apps/$appId/users/$userId' });
  const trpc = app.useTRPC();
  const user = useQuery(trpc.users.get.queryOptions({ id: userId }));

  return (
    <section>
      <p>
        <Link to="/apps/$appId/users" params={{ appId }}>
          ← All users
        </Link>
      </p>
      <h1>{user.data?.primary_email ?? 'User'}</h1>
      {user.isPending && <p role="status">Loading the user…</p>}
      <ErrorNotice error={user.error} title="The user could not be read" />
      {user.data && (
        <>
          <Status user={user.data} />
          <Tabs
            selectedKey={tab}
            onSelectionChange={(key) => {
              const next = USER_TABS.find((t) => t === key) ?? 'profile';
              void navigate({ search: { tab: next === 'profile' ? undefined : next }, replace: true });
            }}
          >
            <TabList aria-label="About this user" className="tablist">
              <Tab id={'profile' satisfies UserTab}>Profile</Tab>
              <Tab id={'sessions' satisfies UserTab}>Sessions</Tab>
              <Tab id={'organizations' satisfies UserTab}>Organizations</Tab>
              <Tab id={'factors' satisfies UserTab}>Passkeys and factors</Tab>
            </TabList>
            <TabPanel id="profile" className="tabpanel">
              <Profile user={user.data} />
            </TabPanel>
            <TabPanel id="sessions" className="tabpanel">
              <Sessions user={user.data} />
            </TabPanel>
            <TabPanel id="organizations" className="tabpanel">
              <Organizations user={user.data} appId={appId} />
            </TabPanel>
            <TabPanel id="factors" className="tabpanel">
              <Factors user={user.data} />
            </TabPanel>
          </Tabs>
        </>
      )}
    </section>
  );
}

function Status({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const update = useMutation(
    trpc.users.update.mutationOptions({
      onSuccess: (saved) => {
        queryClient.setQueryData(trpc.users.get.queryKey({ id: saved.id }), saved);
        void queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() });
      },
    }),
  );
  const banned = user.status === 'banned';
  return (
    <div className="panel status-panel">
      <p>
        Status: <span className={`badge ${user.status}`}>{user.status}</span>
      </p>
      {user.status !== 'merged' && (
        <Button
          className={banned ? 'button' : 'button danger'}
          isDisabled={update.isPending}
          onPress={() => update.mutate({ id: user.id, status: banned ? 'active' : 'banned' })}
        >
          {banned ? 'Unban' : 'Ban'}
        </Button>
      )}
      <p role="status" className="status">
        {update.isSuccess ? (banned ? 'Banned: their sessions were ended.' : 'Active again.') : ''}
      </p>
      <ErrorNotice error={update.error} title={banned ? 'The user was not unbanned' : 'The user was not banned'} />
    </div>
  );
}

function Profile({ user }: { user: User }) {
  return (
    <dl className="facts">
      <dt>Id</dt>
      <dd>
        <code>{user.id}</code>
      </dd>
      <dt>Email</dt>
      <dd>{user.primary_email ?? '—'}</dd>
      <dt>Email verified</dt>
      <dd>{user.email_verified ? 'yes' : 'no'}</dd>
      <dt>Created</dt>
      <dd>{new Date(user.created_at).toLocaleString()}</dd>
      <dt>Updated</dt>
      <dd>{new Date(user.updated_at).toLocaleString()}</dd>
      {user.merged_into && (
        <>
          <dt>Merged into</dt>
          <dd>
            <code>{user.merged_into}</code>
          </dd>
        </>
      )}
      <dt>Profile</dt>
      <dd>
        <pre className="json">{JSON.stringify(user.profile, null, 2)}</pre>
      </dd>
    </dl>
  );
}

function Sessions({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.users.sessions.list.queryOptions({ id: user.id }));
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.users.sessions.list.queryKey({ id: user.id }) });
  const revoke = useMutation(trpc.users.revokeSessions.mutationOptions({ onSuccess: refresh }));
  const revokeOne = useMutation(trpc.users.sessions.revoke.mutationOptions({ onSuccess: refresh }));
  return (
    <div>
      {list.isPending && <p role="status">Loading the sessions…</p>}
      <ErrorNotice error={list.error} title="The sessions could not be listed" />
      {list.data && list.data.length === 0 && (
        <EmptyState
          title="No live session"
          cli={`npx gatehouse sessions list ${user.id}`}
          curl={`curl -s "$GATEHOUSE/v1/users/${user.id}/sessions" \\
  -H "authorization: Bearer $SECRET_KEY" -H "x-application-id: $APP"`}
        >
          <p>The user is signed in nowhere.</p>
        </EmptyState>
      )}
      {list.data && list.data.length > 0 && (
        <table className="table">
          <caption className="visually-hidden">Live sessions, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Browser</th>
              <th scope="col">IP</th>
              <th scope="col">Assurance</th>
              <th scope="col">Signed in</th>
              <th scope="col">Last active</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {list.data.map((session) => (
              <tr key={session.id}>
                <td>{session.user_agent ?? '—'}</td>
                <td>{session.ip ?? '—'}</td>
                <td>{session.aal >= 2 ? 'second factor' : 'one factor'}</td>
                <td>{new Date(session.created_at).toLocaleString()}</td>
                <td>{new Date(session.last_active_at).toLocaleString()}</td>
                <td>
                  <ConfirmButton
                    label="End"
                    ariaLabel={`End the session signed in ${new Date(session.created_at).toLocaleString()}`}
                    title="End this session?"
                    confirmLabel="End the session"
                    isDisabled={revokeOne.isPending}
                    onConfirm={() => revokeOne.mutate({ id: user.id, session_id: session.id })}
                  >
                    <p>Its refresh token stops working at once; the user signs in again on that device.</p>
                  </ConfirmButton>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <ErrorNotice error={revokeOne.error} title="The session was not ended" />
      <p>Sign this user out on every device: their refresh tokens stop working at once, their access tokens within minutes.</p>
      <ConfirmButton
        label="Sign out everywhere"
        title="Sign this user out everywhere?"
        confirmLabel="Sign out everywhere"
        isDisabled={revoke.isPending}
        onConfirm={() => revoke.mutate({ id: user.id })}
      >
        <p>They can sign in again afterwards (unless they are banned).</p>
      </ConfirmButton>
      <p role="status" className="status">
        {revoke.data ? `${revoke.data.revoked} session${revoke.data.revoked === 1 ? '' : 's'} ended.` : ''}
        {revokeOne.isSuccess ? 'The session was ended.' : ''}
      </p>
      <ErrorNotice error={revoke.error} title="The sessions were not ended" />
    </div>
  );
}

function Organizations({ user, appId }: { user: User; appId: string }) {
  const trpc = app.useTRPC();
  const list = useQuery(trpc.users.organizations.queryOptions({ id: user.id }));
  if (list.isPending) return <p role="status">Loading the organizations…</p>;
  if (list.error) return <ErrorNotice error={list.error} title="The organizations could not be listed" />;
  if (list.data.length === 0) {
    return (
      <EmptyState
        title="No organization"
        cli={`npx gatehouse users orgs ${user.id}`}
        curl={`curl -s "$GATEHOUSE/v1/users/${user.id}/organizations" \\
  -H "authorization: Bearer $SECRET_KEY" -H "x-application-id: $APP"`}
      >
        <p>Add the user to an organization from its page.</p>
      </EmptyState>
    );
  }
  return (
    <table className="table">
      <caption className="visually-hidden">Organizations of this user</caption>
      <thead>
        <tr>
          <th scope="col">Organization</th>
          <th scope="col">Role</th>
        </tr>
      </thead>
      <tbody>
        {list.data.map((organization) => (
          <tr key={organization.id}>
            <td>
              <Link to="/apps/$appId/organizations/$orgId" params={{ appId, orgId: organization.id }}>
                {organization.name}
              </Link>
            </td>
            <td>{organization.role}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Factors({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const factors = useQuery(trpc.users.factors.list.queryOptions({ id: user.id }));
  if (factors.isPending) return <p role="status">Loading the factors…</p>;
  if (factors.error) return <ErrorNotice error={factors.error} title="The factors could not be listed" />;
  const list = factors.data;
  if (list.length === 0) {
    return (
      <EmptyState
        title="No passkey or second factor"
        cli={`npx gatehouse users factors ${user.id}`}
        curl={`curl -s "$GATEHOUSE/v1/users/${user.id}/factors" \\
  -H "authorization: Bearer $SECRET_KEY" -H "x-application-id: $APP"`}
      >
        <p>The user adds them on their account page, or when the application asks for a second factor.</p>
      </EmptyState>
    );
  }
  return (
    <table className="table">
      <caption className="visually-hidden">Passkeys and second factors</caption>
      <thead>
        <tr>
          <th scope="col">Kind</th>
          <th scope="col">Name</th>
          <th scope="col">Added</th>
          <th scope="col">Last used</th>
        </tr>
      </thead>
      <tbody>
        {list.map((factor) => (
          <tr key={factor.id}>
            <td>{factor.kind}</td>
            <td>{factor.name}</td>
            <td>{new Date(factor.created_at).toLocaleString()}</td>
            <td>{factor.last_used_at ? new Date(factor.last_used_at).toLocaleString() : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
