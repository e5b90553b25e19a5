import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { type ReactNode, useState } from 'react';
import { Button, Form, Input, Label, Tab, TabList, TabPanel, Tabs, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { when } from '../format.ts';
import { USER_TABS, type UserTab } from '../search.ts';

type User = Outputs['users']['get'];

/**
 * One user: profile, status (ban and unban), live sessions (end one, or sign out everywhere), organizations, factors,
 * linked accounts (unlink), authorized apps (revoke) and their events; the tab is in the URL. Below the tabs, merging
 * the user into another.
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
              <Tab id={'identities' satisfies UserTab}>Linked accounts</Tab>
              <Tab id={'grants' satisfies UserTab}>Authorized apps</Tab>
              <Tab id={'events' satisfies UserTab}>Events</Tab>
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
            <TabPanel id="identities" className="tabpanel">
              <Identities user={user.data} />
            </TabPanel>
            <TabPanel id="grants" className="tabpanel">
              <Grants user={user.data} />
            </TabPanel>
            <TabPanel id="events" className="tabpanel">
              <Events user={user.data} appId={appId} />
            </TabPanel>
          </Tabs>
          <MergeUser user={user.data} appId={appId} />
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
      {list.data && (
        <ListTable
          caption="Live sessions, newest first"
          columns={['Browser', 'IP', 'Assurance', 'Signed in', 'Last active']}
          actions="Actions"
          rows={list.data}
          rowKey={(session) => session.id}
          empty={
            <UserEmptyState user={user} title="No live session" cli="sessions list" path="sessions">
              <p>The user is signed in nowhere.</p>
            </UserEmptyState>
          }
        >
          {(session) => (
            <>
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
            </>
          )}
        </ListTable>
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

/** An empty list of this user's: what to do, and the same with `npx gatehouse <cli> <id>` and a GET of /v1/users/<id>/<path>. */
function UserEmptyState({
  user,
  title,
  cli,
  path,
  children,
}: {
  user: User;
  title: string;
  cli: string;
  path: string;
  children: ReactNode;
}) {
  return (
    <EmptyState title={title} cli={`npx gatehouse ${cli} ${user.id}`} curl={curl(`/v1/users/${user.id}/${path}`)}>
      {children}
    </EmptyState>
  );
}
/**
 * A tab's list: while it loads, the status; if it could not be read, the error; then the list (`children`), and, where
 * its rows have an action (unlink, revoke), what the action did.
 */
function TabListing<T>({
  list,
  what,
  action,
  children,
}: {
  list: { error: unknown; data: readonly T[] | undefined };
  /** What the list holds, in the plural: "linked accounts". */
  what: string;
  action?: { mutation: { isSuccess: boolean; error: unknown }; done: string; failed: string };
  children: (rows: readonly T[]) => ReactNode;
}) {
  if (list.error) return <ErrorNotice error={list.error} title={`The ${what} could not be listed`} />;
  if (!list.data) return <p role="status">{`Loading the ${what}…`}</p>;
  if (!action) return children(list.data);
  return (
    <div>
      {children(list.data)}
      <p role="status" className="status">
        {action.mutation.isSuccess ? action.done : ''}
      </p>
      <ErrorNotice error={action.mutation.error} title={action.failed} />
    </div>
  );
}

function Organizations({ user, appId }: { user: User; appId: string }) {
  const trpc = app.useTRPC();
  const list = useQuery(trpc.users.organizations.queryOptions({ id: user.id }));
  return (
    <TabListing list={list} what="organizations">
      {(rows) => (
        <ListTable
          caption="Organizations of this user"
          columns={['Organization', 'Role']}
          rows={rows}
          rowKey={(organization) => organization.id}
          empty={
            <UserEmptyState user={user} title="No organization" cli="users orgs" path="organizations">
              <p>Add the user to an organization from its page.</p>
            </UserEmptyState>
          }
        >
          {(organization) => (
            <>
              <td>
                <Link to="/apps/$appId/organizations/$orgId" params={{ appId, orgId: organization.id }}>
                  {organization.name}
                </Link>
              </td>
              <td>{organization.role}</td>
            </>
          )}
        </ListTable>
      )}
    </TabListing>
  );
}

function Factors({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const factors = useQuery(trpc.users.factors.list.queryOptions({ id: user.id }));
  return (
    <TabListing list={factors} what="factors">
      {(rows) => (
        <ListTable
          caption="Passkeys and second factors"
          columns={['Kind', 'Name', 'Added', 'Last used']}
          rows={rows}
          rowKey={(factor) => factor.id}
          empty={
            <UserEmptyState user={user} title="No passkey or second factor" cli="users factors" path="factors">
              <p>The user adds them on their account page, or when the application asks for a second factor.</p>
            </UserEmptyState>
          }
        >
          {(factor) => (
            <>
              <td>{factor.kind}</td>
              <td>{factor.name}</td>
              <td>{new Date(factor.created_at).toLocaleString()}</td>
              <td>{when(factor.last_used_at)}</td>
            </>
          )}
        </ListTable>
      )}
    </TabListing>
  );
}

const PROVIDER_KINDS: Record<string, string> = { oauth: 'social sign-in', saml: 'SAML single sign-on', passkey: 'passkey' };

function Identities({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.users.identities.list.queryOptions({ id: user.id }));
  const unlink = useMutation(
    trpc.users.identities.remove.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.users.identities.list.queryKey({ id: user.id }) }),
    }),
  );
  return (
    <TabListing
      list={list}
      what="linked accounts"
      action={{ mutation: unlink, done: 'The account was unlinked.', failed: 'The account was not unlinked' }}
    >
      {(rows) => (
        <ListTable
          caption="Linked accounts, newest first"
          columns={['Kind', 'Provider', 'Account', 'Linked', 'Last used']}
          actions="Actions"
          rows={rows}
          rowKey={(identity) => identity.id}
          empty={
            <UserEmptyState user={user} title="No linked account" cli="users identities" path="identities">
              <p>The user links one when they sign in with a social provider or SAML, or on their account page.</p>
            </UserEmptyState>
          }
        >
          {(identity) => (
            <>
              <td>{PROVIDER_KINDS[identity.kind] ?? identity.kind}</td>
              <td>{identity.provider ?? '—'}</td>
              <td>{identity.name}</td>
              <td>{new Date(identity.created_at).toLocaleString()}</td>
              <td>{when(identity.last_used_at)}</td>
              <td>
                <ConfirmButton
                  label="Unlink"
                  ariaLabel={`Unlink ${identity.provider ?? identity.kind} account ${identity.name}`}
                  title="Unlink this account?"
                  confirmLabel="Unlink the account"
                  isDisabled={unlink.isPending}
                  onConfirm={() => unlink.mutate({ id: user.id, identity_id: identity.id })}
                >
                  <p>
                    {user.primary_email ?? 'The user'} can no longer sign in with {identity.name}
                    {identity.provider ? ` (${identity.provider})` : ''}. The last way they can sign in is never unlinked.
                  </p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
    </TabListing>
  );
}

function Grants({ user }: { user: User }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const list = useQuery(trpc.users.grants.list.queryOptions({ id: user.id }));
  const revoke = useMutation(
    trpc.users.grants.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.users.grants.list.queryKey({ id: user.id }) }),
    }),
  );
  return (
    <TabListing
      list={list}
      what="authorized apps"
      action={{ mutation: revoke, done: 'The grant was revoked.', failed: 'The grant was not revoked' }}
    >
      {(rows) => (
        <ListTable
          caption="Apps the user authorized (OAuth grants)"
          columns={['Client', 'Scopes', 'Granted', 'Updated']}
          actions="Actions"
          rows={rows}
          rowKey={(grant) => grant.id}
          empty={
            <UserEmptyState user={user} title="No authorized app" cli="users grants" path="grants">
              <p>An app appears here when the user approves its access (OAuth): its client and the scopes they granted.</p>
            </UserEmptyState>
          }
        >
          {(grant) => (
            <>
              <td>
                <code>{grant.client_id}</code>
              </td>
              <td>{grant.scopes.join(' ')}</td>
              <td>{new Date(grant.created_at).toLocaleString()}</td>
              <td>{new Date(grant.updated_at).toLocaleString()}</td>
              <td>
                <ConfirmButton
                  label="Revoke"
                  ariaLabel={`Revoke the grant to client ${grant.client_id}`}
                  title="Revoke this grant?"
                  confirmLabel="Revoke the grant"
                  isDisabled={revoke.isPending}
                  onConfirm={() => revoke.mutate({ id: user.id, grant_id: grant.id })}
                >
                  <p>Every token the app holds for {user.primary_email ?? 'this user'} stops working at once.</p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
    </TabListing>
  );
}

/** How many of the newest entries the timeline asks for, as actor and as target each. */
const TIMELINE_SIZE = 50;

/** The audit log entries with this user as actor or as target (two filtered reads, merged), newest first. */
function Events({ user, appId }: { user: User; appId: string }) {
  const trpc = app.useTRPC();
  const asActor = useQuery(trpc.auditLogs.list.queryOptions({ actor_id: user.id, limit: TIMELINE_SIZE }));
  const asTarget = useQuery(trpc.auditLogs.list.queryOptions({ target_id: user.id, limit: TIMELINE_SIZE }));
  if (asActor.isPending || asTarget.isPending) return <p role="status">Loading the events…</p>;
  if (asActor.error || asTarget.error) {
    return <ErrorNotice error={asActor.error ?? asTarget.error} title="The events could not be listed" />;
  }
  const byId = new Map<string, { entry: AuditEntry; actor: boolean; target: boolean }>();
  for (const entry of asActor.data.audit_logs) byId.set(entry.id, { entry, actor: true, target: false });
  for (const entry of asTarget.data.audit_logs) {
    const seen = byId.get(entry.id);
    if (seen) seen.target = true;
    else byId.set(entry.id, { entry, actor: false, target: true });
  }
  const timeline = [...byId.values()]
    .sort((a, b) => b.entry.occurred_at.localeCompare(a.entry.occurred_at) || b.entry.id.localeCompare(a.entry.id))
    .slice(0, TIMELINE_SIZE);
  const more = asActor.data.total > TIMELINE_SIZE || asTarget.data.total > TIMELINE_SIZE;
  if (timeline.length === 0) {
    return (
      <EmptyState
        title="No event"
        cli={`npx gatehouse audit-logs list --target-id ${user.id}`}
        curl={curl(`/v1/audit-logs?target_id=${user.id}`)}
      >
        <p>Nothing this user did, and nothing done to them, is in the audit log.</p>
      </EmptyState>
    );
  }
  return (
    <div>
      <ol className="timeline" aria-label="Events of this user, newest first">
        {timeline.map(({ entry, actor, target }) => (
          <li key={entry.id}>
            <time dateTime={entry.occurred_at}>{new Date(entry.occurred_at).toLocaleString()}</time>
            <p>
              <code>{entry.action}</code>{' '}
              <span className="badge">{actor && target ? 'by and to this user' : actor ? 'by this user' : 'to this user'}</span>
            </p>
            <p className="meta">
              <span>
                actor {entry.actor.type} <code>{entry.actor.id}</code>
              </span>
              {entry.ip && <span>from {entry.ip}</span>}
            </p>
          </li>
        ))}
      </ol>
      <p>
        {more ? `The newest ${TIMELINE_SIZE} are shown. ` : ''}
        <Link to="/apps/$appId/events" params={{ appId }} search={{ actor: user.id }}>
          See what this user did in the audit log
        </Link>
        .
      </p>
    </div>
  );
}

type AuditEntry = Outputs['auditLogs']['list']['audit_logs'][number];

/**
 * Merges this user (the source: it becomes a tombstone) into another one, found by email or id; the confirmation names
 * both users.
 */
function MergeUser({ user, appId }: { user: User; appId: string }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [needle, setNeedle] = useState('');
  const [asked, setAsked] = useState<string | null>(null);
  const candidates = useQuery({
    ...trpc.users.list.queryOptions({ search: asked ?? '', limit: 5 }),
    enabled: asked !== null,
  });
  const merge = useMutation(
    trpc.users.merge.mutationOptions({
      onSuccess: (target) => {
        queryClient.setQueryData(trpc.users.get.queryKey({ id: target.id }), target);
        void queryClient.invalidateQueries({ queryKey: trpc.users.get.queryKey({ id: user.id }) });
        void queryClient.invalidateQueries({ queryKey: trpc.users.list.queryKey() });
        setAsked(null);
      },
    }),
  );
  // A merged user cannot be merged again; the notice of the merge just made stays.
  if (user.status === 'merged' && !merge.data) return null;
  const found = (candidates.data?.users ?? []).filter((u) => u.id !== user.id && u.status !== 'merged');
  const name = (u: User) => u.primary_email ?? u.id;
  return (
    <section className="panel danger-zone" aria-labelledby="merge-user">
      <h2 id="merge-user">Merge into another user</h2>
      {user.status !== 'merged' && (
        <>
          <p>
            When one person has two accounts: this user ({name(user)}) is closed and points to the user you keep, who gains its
            sign-in methods, memberships and tuples; its sessions end.
          </p>
          <Form
            onSubmit={(event) => {
              event.preventDefault();
              merge.reset();
              setAsked(needle.trim() || null);
            }}
          >
            <TextField className="field" isRequired value={needle} onChange={setNeedle} maxLength={320}>
              <Label>The user to keep</Label>
              <Input />
              <Text slot="description">Part of their email address</Text>
            </TextField>
            <Button type="submit" className="button">
              Find the user
            </Button>
          </Form>
          <ErrorNotice error={candidates.error} title="The users could not be searched" />
          {asked !== null && candidates.data && found.length === 0 && (
            <p role="status">No other user's email contains “{asked}”.</p>
          )}
          {asked !== null && found.length > 0 && (
            <ul className="candidates" aria-label="Users to merge into">
              {found.map((target) => (
                <li key={target.id}>
                  {name(target)} <code>{target.id}</code>{' '}
                  <ConfirmButton
                    label={`Merge into ${name(target)}`}
                    title={`Merge ${name(user)} into ${name(target)}?`}
                    confirmLabel="Merge the users"
                    isDisabled={merge.isPending}
                    onConfirm={() => merge.mutate({ source_user_id: user.id, target_user_id: target.id })}
                  >
                    <p>
                      {name(user)} becomes a tombstone that points to {name(target)}; {name(target)} keeps everything and gains
                      what {name(user)} had. There is no undo.
                    </p>
                  </ConfirmButton>
                </li>
              ))}
            </ul>
          )}
        </>
      )}
      {merge.data && (
        <div className="notice success" role="status">
          <p className="notice-title">Merged.</p>
          <p>
            {name(user)} now points to{' '}
            <Link to="/apps/$appId/users/$userId" params={{ appId, userId: merge.data.id }}>
              {name(merge.data)}
            </Link>
            .
          </p>
        </div>
      )}
      <ErrorNotice error={merge.error} title="The users were not merged" />
    </section>
  );
}
