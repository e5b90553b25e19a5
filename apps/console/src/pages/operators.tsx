import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useSearch } from '@tanstack/react-router';
import { useId, useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, TextField } from 'react-aria-components';
import { type Inputs, type Outputs, operator } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { PAGE_SIZE } from '../search.ts';
import { useSession } from '../session.ts';

type Operator = Outputs['operators']['list']['operators'][number];
type Role = Inputs['operators']['add']['role'];

const ROLES: readonly Role[] = ['viewer', 'support', 'admin', 'owner'];
const ROLE_HELP: Record<Role, string> = {
  viewer: 'reads everything',
  support: 'viewer, and helps users (ban, sign out, merge)',
  admin: 'everything in the application',
  owner: 'admin, and deletes the application',
};
// `includes` takes only a Role: any value may be asked about, and the answer narrows it.
const isRole = (value: unknown): value is Role => ROLES.includes(value as Role);

/**
 * The console's operators (instance-wide owners only: the server refuses anyone else) with their roles: add one (the
 * one-time sign-in link is shown once), change a role, remove one. The page of the list is in the URL.
 */
export function OperatorsPage() {
  const { offset = 0 } = useSearch({ from: '/operators' });
  const trpc = operator.useTRPC();
  const session = useSession();
  const list = useQuery({
    ...trpc.operators.list.queryOptions({ limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
  });
  const page = list.data;
  const applicationName = (id: string | null) =>
    id === null ? 'every application' : (session?.applications.find((a) => a.id === id)?.name ?? id);

  return (
    <section>
      <h1>Operators</h1>
      <p>The people who sign in to this console, and their role in each application or in all of them.</p>
      <ErrorNotice error={list.error} title="The operators could not be listed" />
      {list.isPending && <p role="status">Loading the operators…</p>}
      {page && page.total === 0 && (
        <EmptyState
          title="No operator yet"
          cli="npx gatehouse operators add you@example.com --role owner"
          curl={curl('/v1/operators', {
            method: 'POST',
            body: '{"email": "you@example.com", "role": "owner", "application_id": null}',
            operator: true,
          })}
        />
      )}
      {page && page.operators.length > 0 && (
        <ListTable
          caption="Operators"
          columns={['Email', 'Roles', 'Added']}
          actions="Actions"
          rows={page.operators}
          rowKey={(op) => op.id}
          busy={list.isFetching}
          pager={{ label: 'Pages of operators', offset: page.offset, total: page.total }}
        >
          {(op) => <OperatorRow op={op} applicationName={applicationName} isSelf={op.email === session?.operator.email} />}
        </ListTable>
      )}
      <AddOperator />
    </section>
  );
}

function OperatorRow({
  op,
  applicationName,
  isSelf,
}: {
  op: Operator;
  applicationName: (id: string | null) => string;
  isSelf: boolean;
}) {
  const trpc = operator.useTRPC();
  const queryClient = useQueryClient();
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.operators.list.queryKey() });
  const setRole = useMutation(trpc.operators.setRole.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.operators.remove.mutationOptions({ onSuccess: refresh }));
  return (
    <>
      <td>
        {op.email}
        {isSelf ? <span className="badge">you</span> : null}
      </td>
      <td>
        <ul className="plain">
          {op.roles.map((r) => (
            <li key={r.application_id ?? 'all'}>
              <RoleChanger
                email={op.email}
                role={r.role}
                where={applicationName(r.application_id)}
                isDisabled={setRole.isPending}
                onChange={(role) => setRole.mutate({ id: op.id, application_id: r.application_id, role })}
              />
            </li>
          ))}
        </ul>
        <p role="status" className="status">
          {setRole.isSuccess ? 'The role was changed.' : ''}
        </p>
        <ErrorNotice error={setRole.error} title="The role was not changed" />
      </td>
      <td>{new Date(op.created_at).toLocaleString()}</td>
      <td>
        <ConfirmButton
          label="Remove"
          ariaLabel={`Remove the operator ${op.email}`}
          title={`Remove ${op.email}?`}
          confirmLabel="Remove the operator"
          isDisabled={remove.isPending}
          onConfirm={() => remove.mutate({ id: op.id })}
        >
          <p>Their roles go and their console sessions end at once. Their past actions stay in the audit log.</p>
        </ConfirmButton>
        <ErrorNotice error={remove.error} title="The operator was not removed" />
      </td>
    </>
  );
}

/** One role of an operator, for one application or all: a native select (labelled) that saves on its button. */
function RoleChanger({
  email,
  role,
  where,
  isDisabled,
  onChange,
}: {
  email: string;
  role: Role;
  where: string;
  isDisabled: boolean;
  onChange: (role: Role) => void;
}) {
  const id = useId();
  const [value, setValue] = useState<Role>(role);
  return (
    <span className="role-changer">
      <label htmlFor={id} className="visually-hidden">
        Role of {email} in {where}
      </label>
      <select id={id} value={value} onChange={(event) => isRole(event.target.value) && setValue(event.target.value)}>
        {ROLES.map((r) => (
          <option key={r} value={r}>
            {r}
          </option>
        ))}
      </select>{' '}
      in {where}{' '}
      <Button
        className="button small"
        isDisabled={isDisabled || value === role}
        aria-label={`Save the role of ${email} in ${where}`}
        onPress={() => onChange(value)}
      >
        Save
      </Button>
    </span>
  );
}

function AddOperator() {
  const trpc = operator.useTRPC();
  const queryClient = useQueryClient();
  const session = useSession();
  const applications = session?.applications ?? [];
  const [email, setEmail] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [application, setApplication] = useState('all');
  const selectId = useId();
  const add = useMutation(
    trpc.operators.add.mutationOptions({
      onSuccess: () => {
        setEmail('');
        void queryClient.invalidateQueries({ queryKey: trpc.operators.list.queryKey() });
      },
    }),
  );
  const added = add.data;
  return (
    <section className="panel" aria-labelledby="add-operator">
      <h2 id="add-operator">Add an operator</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          add.mutate({ email, role, application_id: application === 'all' ? null : application });
        }}
      >
        <TextField className="field" type="email" isRequired value={email} onChange={setEmail} maxLength={320}>
          <Label>Email</Label>
          <Input />
        </TextField>
        <RadioGroup className="field radios" value={role} onChange={(value) => isRole(value) && setRole(value)}>
          <Label>Role</Label>
          {ROLES.map((r) => (
            <Radio key={r} value={r}>
              {r}: {ROLE_HELP[r]}
            </Radio>
          ))}
        </RadioGroup>
        <div className="field">
          <label htmlFor={selectId}>Application</label>
          <select id={selectId} value={application} onChange={(event) => setApplication(event.target.value)}>
            <option value="all">Every application</option>
            {applications.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </div>
        <Button type="submit" className="button primary" isDisabled={add.isPending}>
          {add.isPending ? 'Adding…' : 'Add the operator'}
        </Button>
      </Form>
      <ErrorNotice error={add.error} title="The operator was not added" />
      {added && (
        <div className="notice success" role="status">
          <p className="notice-title">Added {added.operator.email}.</p>
          <p>
            Their one-time sign-in link is shown once: send it to them now. It works once, until{' '}
            {new Date(added.sign_in_link.expires_at).toLocaleString()}.
          </p>
          <p className="secret">
            <code>{added.sign_in_link.url}</code>{' '}
            <CopyButton value={added.sign_in_link.url} label={`Copy the sign-in link of ${added.operator.email}`} />
          </p>
          <Button className="button small" onPress={() => add.reset()}>
            Hide the link
          </Button>
        </div>
      )}
    </section>
  );
}
