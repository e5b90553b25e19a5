import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextField } from 'react-aria-components';
import { app } from '../../api.ts';
import { ConfirmButton } from '../../components/confirm.tsx';
import { curl, EmptyState } from '../../components/empty-state.tsx';
import { ErrorNotice } from '../../components/error-notice.tsx';
import { ListTable } from '../../components/list-table.tsx';
import { when } from '../../format.ts';
import { INVITATION_STATUSES, PAGE_SIZE } from '../../search.ts';

const DAY_S = 24 * 3600;

/**
 * The organization's invitations, newest first (paged, filtered by status in the URL): invite an address with a role
 * and a lifetime, revoke one (its link stops at once), resend one (a new link; the old one stops).
 */
export function Invitations({ orgId }: { orgId: string }) {
  const { offset = 0, status } = useSearch({ from: '/apps/$appId/organizations/$orgId' });
  const navigate = useNavigate({ from: '/apps/$appId/organizations/$orgId' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const invitations = useQuery({
    ...trpc.organizations.invitations.list.queryOptions({ id: orgId, limit: PAGE_SIZE, offset, status }),
    placeholderData: keepPreviousData,
  });
  const [said, setSaid] = useState('');
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.organizations.invitations.list.queryKey() });
  const revoke = useMutation(
    trpc.organizations.invitations.revoke.mutationOptions({
      onSuccess: (invitation) => {
        setSaid(`The invitation of ${invitation.email} was revoked.`);
        return refresh();
      },
    }),
  );
  const resend = useMutation(
    trpc.organizations.invitations.resend.mutationOptions({
      onSuccess: (invitation) => {
        setSaid(`A new link was mailed to ${invitation.email}.`);
        return refresh();
      },
    }),
  );
  const page = invitations.data;

  return (
    <div>
      <h2>Invitations</h2>
      <p>Gatehouse mails each invited address a link that opens once; accepting it makes them a member with the role.</p>
      <RadioGroup
        className="field"
        orientation="horizontal"
        value={status ?? 'all'}
        onChange={(value) =>
          void navigate({
            search: { tab: 'invitations', status: INVITATION_STATUSES.find((s) => s === value) },
            replace: true,
          })
        }
      >
        <Label>Show</Label>
        <div className="radios segmented">
          <Radio value="all">All</Radio>
          {INVITATION_STATUSES.map((s) => (
            <Radio key={s} value={s}>
              {s}
            </Radio>
          ))}
        </div>
      </RadioGroup>
      {invitations.isPending && <p role="status">Loading the invitations…</p>}
      <ErrorNotice error={invitations.error} title="The invitations could not be listed" />
      <ErrorNotice error={revoke.error} title="The invitation was not revoked" />
      <ErrorNotice error={resend.error} title="The invitation was not sent again" />
      <p role="status" className="status">
        {said}
      </p>
      {page && page.total === 0 && (
        <EmptyState
          title={status ? `No ${status} invitation` : 'No invitation yet'}
          cli={`npx gatehouse orgs invite ${orgId} grace@example.com --role member --expires-in 7d`}
          curl={curl(`/v1/organizations/${orgId}/invitations`, {
            method: 'POST',
            body: '{"email": "grace@example.com", "role": "member"}',
          })}
        />
      )}
      {page && page.invitations.length > 0 && (
        <ListTable
          caption="Invitations, newest first"
          columns={['Email', 'Role', 'Status', 'Expires', 'Sent']}
          actions="Actions"
          rows={page.invitations}
          rowKey={(invitation) => invitation.id}
          pager={{ label: 'Pages of invitations', offset: page.offset, total: page.total }}
        >
          {(invitation) => (
            <>
              <td>{invitation.email}</td>
              <td>{invitation.role}</td>
              <td>
                <span className="badge">{invitation.status}</span>
                {invitation.accepted_at && <span className="meta"> {when(invitation.accepted_at)}</span>}
                {invitation.revoked_at && <span className="meta"> {when(invitation.revoked_at)}</span>}
              </td>
              <td>{when(invitation.expires_at)}</td>
              <td>{when(invitation.created_at)}</td>
              <td>
                <div className="row-actions">
                  {(invitation.status === 'pending' || invitation.status === 'expired') && (
                    <>
                      <Button
                        className="button small"
                        aria-label={`Resend the invitation of ${invitation.email}`}
                        isDisabled={resend.isPending}
                        onPress={() => resend.mutate({ id: orgId, invitation_id: invitation.id })}
                      >
                        Resend
                      </Button>
                      <ConfirmButton
                        label="Revoke"
                        ariaLabel={`Revoke the invitation of ${invitation.email}`}
                        title={`Revoke the invitation of ${invitation.email}?`}
                        confirmLabel="Revoke the invitation"
                        isDisabled={revoke.isPending}
                        onConfirm={() => revoke.mutate({ id: orgId, invitation_id: invitation.id })}
                      >
                        <p>Its link stops working at once. You can invite the address again later.</p>
                      </ConfirmButton>
                    </>
                  )}
                </div>
              </td>
            </>
          )}
        </ListTable>
      )}
      <Invite orgId={orgId} onInvited={refresh} />
    </div>
  );
}

function Invite({ orgId, onInvited }: { orgId: string; onInvited: () => Promise<unknown> }) {
  const trpc = app.useTRPC();
  const [email, setEmail] = useState('');
  const [role, setRole] = useState('member');
  const [days, setDays] = useState('');
  const invite = useMutation(
    trpc.organizations.invitations.create.mutationOptions({
      onSuccess: async () => {
        setEmail('');
        setDays('');
        await onInvited();
      },
    }),
  );
  const lifetime = days.trim() === '' ? undefined : Number(days);
  const lifetimeValid = lifetime === undefined || (Number.isInteger(lifetime) && lifetime >= 1 && lifetime <= 30);
  return (
    <section className="panel" aria-labelledby="invite">
      <h2 id="invite">Invite someone</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          if (!lifetimeValid) return;
          invite.mutate({
            id: orgId,
            email: email.trim(),
            role: role.trim(),
            ...(lifetime !== undefined ? { expires_in_s: lifetime * DAY_S } : {}),
          });
        }}
      >
        <TextField className="field" type="email" isRequired value={email} onChange={setEmail} maxLength={320}>
          <Label>Email</Label>
          <Input placeholder="grace@example.com" />
        </TextField>
        <TextField className="field" isRequired value={role} onChange={setRole} maxLength={64}>
          <Label>Role</Label>
          <Input />
          <Text slot="description">owner, admin, member, or a role of your application.</Text>
        </TextField>
        <TextField className="field" inputMode="numeric" value={days} onChange={setDays} isInvalid={!lifetimeValid} maxLength={2}>
          <Label>Expires after (days)</Label>
          <Input placeholder="7" />
          <Text slot="description">
            {lifetimeValid ? 'From 1 to 30 days; 7 when left empty.' : 'A whole number of days, from 1 to 30.'}
          </Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={invite.isPending || !lifetimeValid}>
          {invite.isPending ? 'Inviting…' : 'Send the invitation'}
        </Button>
      </Form>
      <ErrorNotice error={invite.error} title="The invitation was not sent" />
      {invite.data && (
        <p className="notice success" role="status">
          Invitation mailed to {invite.data.email}, valid until {when(invite.data.expires_at)}.
        </p>
      )}
    </section>
  );
}
