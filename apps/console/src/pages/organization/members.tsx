import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Text, TextField } from 'react-aria-components';
import { app } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { curl, EmptyState } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { PAGE_SIZE } from '../../search.ts';

/** The organization's members (paged in the URL), adding a user by id, changing a member's role, removing a member. */
export function Members({ appId, orgId }: { appId: string; orgId: string }) {
  const { offset = 0 } = useSearch({ from: '/apps/$appId/organizations/$orgId' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const members = useQuery({
    ...trpc.organizations.members.list.queryOptions({ id: orgId, limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
  });
  const refresh = () =>
    Promise.all([
      queryClient.invalidateQueries({ queryKey: trpc.organizations.members.list.queryKey() }),
      queryClient.invalidateQueries({ queryKey: trpc.organizations.get.queryKey({ id: orgId }) }),
    ]);
  const remove = useMutation(trpc.organizations.members.remove.mutationOptions({ onSuccess: refresh }));
  const update = useMutation(trpc.organizations.members.update.mutationOptions({ onSuccess: refresh }));
  const page = members.data;

  return (
    <div>
      <h2>Members</h2>
      {members.isPending && <p role="status">Loading the members…</p>}
      <ErrorNotice error={members.error} title="The members could not be listed" />
      <ErrorNotice error={remove.error} title="The member was not removed" />
      <ErrorNotice error={update.error} title="The role was not changed" />
      <p role="status" className="status">
        {update.isSuccess ? `${update.data.email ?? update.data.user_id} is now ${update.data.role}.` : ''}
      </p>
      {page && page.total === 0 && (
        <EmptyState
          title="No member yet"
          cli={`npx gatehouse orgs members add ${orgId} <user id> --role admin`}
          curl={curl(`/v1/organizations/${orgId}/members`, { method: 'POST', body: '{"user_id": "<user id>", "role": "admin"}' })}
        />
      )}
      {page && page.members.length > 0 && (
        <ListTable
          caption="Members"
          columns={['User', 'Role', 'Status', 'Source']}
          actions="Actions"
          rows={page.members}
          rowKey={(member) => member.user_id}
          pager={{ label: 'Pages of members', offset: page.offset, total: page.total }}
        >
          {(member) => (
            <>
              <td>
                <Link to="/apps/$appId/users/$userId" params={{ appId, userId: member.user_id }}>
                  {member.email ?? member.user_id}
                </Link>
              </td>
              <td>
                <RoleEditor
                  key={member.role}
                  who={member.email ?? member.user_id}
                  role={member.role}
                  isDisabled={update.isPending}
                  onSave={(role) => update.mutate({ id: orgId, user_id: member.user_id, role })}
                />
              </td>
              <td>{member.status}</td>
              <td>{member.source}</td>
              <td>
                <ConfirmButton
                  label="Remove"
                  ariaLabel={`Remove ${member.email ?? member.user_id}`}
                  title="Remove this member?"
                  confirmLabel="Remove the member"
                  isDisabled={remove.isPending}
                  onConfirm={() => remove.mutate({ id: orgId, user_id: member.user_id })}
                >
                  <p>They lose their role in the organization; their account stays.</p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
      <AddMember orgId={orgId} onAdded={refresh} />
    </div>
  );
}

/** A member's role, edited in place: the field (labelled with whose role it is) and a button that saves a change. */
function RoleEditor({
  who,
  role,
  isDisabled,
  onSave,
}: {
  who: string;
  role: string;
  isDisabled: boolean;
  onSave: (role: string) => void;
}) {
  const [value, setValue] = useState(role);
  const changed = value.trim() !== '' && value.trim() !== role;
  return (
    <Form
      className="role-editor"
      onSubmit={(event) => {
        event.preventDefault();
        if (changed) onSave(value.trim());
      }}
    >
      <TextField className="field compact" value={value} onChange={setValue} maxLength={64} aria-label={`Role of ${who}`}>
        <Input />
      </TextField>
      <Button type="submit" className="button small" isDisabled={isDisabled || !changed} aria-label={`Save the role of ${who}`}>
        Save
      </Button>
    </Form>
  );
}

function AddMember({ orgId, onAdded }: { orgId: string; onAdded: () => Promise<unknown> }) {
  const trpc = app.useTRPC();
  const [userId, setUserId] = useState('');
  const [role, setRole] = useState('member');
  const add = useMutation(
    trpc.organizations.members.add.mutationOptions({
      onSuccess: async () => {
        setUserId('');
        await onAdded();
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="add-member">
      <h2 id="add-member">Add a member</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate({ id: orgId, user_id: userId.trim(), role });
        }}
      >
        <TextField className="field" isRequired value={userId} onChange={setUserId}>
          <Label>User id</Label>
          <Input />
          <Text slot="description">The id is on the user's page.</Text>
        </TextField>
        <TextField className="field" isRequired value={role} onChange={setRole} maxLength={64}>
          <Label>Role</Label>
          <Input />
          <Text slot="description">owner, admin, member, or a role of your application.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add the member'}
        </Button>
      </Form>
      <ErrorNotice error={add.error} title="The member was not added" />
    </section>
  );
}
