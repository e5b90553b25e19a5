import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type ReactNode, useState } from 'react';
import {
  Button,
  Form,
  Input,
  Label,
  ListBox,
  ListBoxItem,
  Popover,
  Radio,
  RadioGroup,
  Select,
  SelectValue,
  Text,
  TextField,
} from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { when } from '../format.ts';

type Group = Outputs['access']['hostGroups']['list'][number];
type Host = Outputs['access']['hosts']['list'][number];
type Rule = Outputs['access']['rules']['list'][number];

/**
 * Host access rules: which users and organizations may sign in to which hosts (a matching deny wins; no matching allow
 * is deny). Host groups, hosts and rules: list, add, remove.
 */
export function AccessRulesPage() {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const groups = useQuery(trpc.access.hostGroups.list.queryOptions());
  const hosts = useQuery(trpc.access.hosts.list.queryOptions());
  const rules = useQuery(trpc.access.rules.list.queryOptions());
  // Removing a group or a host removes its rules too (and a group's hosts leave it): every list is read again.
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.access.pathKey() });
  const groupName = (id: string | null) => groups.data?.find((g) => g.id === id)?.name;
  const targetName = (rule: Rule) =>
    rule.target_kind === 'host' ? hosts.data?.find((h) => h.id === rule.target_id)?.name : groupName(rule.target_id);

  return (
    <section>
      <h1>Host access</h1>
      <p>
        Which users and organizations may sign in to your servers. A matching deny rule wins; a user no allow rule matches is
        refused.
      </p>
      {[groups, hosts, rules].some((q) => q.isPending) && <p role="status">Loading the rules…</p>}
      <ErrorNotice error={rules.error ?? hosts.error ?? groups.error} title="The access rules could not be read" />

      <Part
        id="rules"
        heading="Rules"
        rows={rules.data}
        emptyTitle="No access rule"
        cli="npx gatehouse access rules create allow --user <user id> --host <host id>"
        path="access-rules"
        body='{"effect": "allow", "subject_kind": "user", "subject_id": "<user id>", "target_kind": "host", "target_id": "<host id>"}'
        table={(rows) => <RulesTable rules={rows} targetName={targetName} onRemoved={refresh} />}
      >
        {groups.data && hosts.data && <AddRule groups={groups.data} hosts={hosts.data} onAdded={refresh} />}
      </Part>

      <Part
        id="hosts"
        heading="Hosts"
        rows={hosts.data}
        emptyTitle="No host"
        cli="npx gatehouse access hosts create web-1"
        path="hosts"
        body='{"name": "web-1"}'
        table={(rows) => <HostsTable hosts={rows} groupName={groupName} onRemoved={refresh} />}
      >
        {groups.data && <AddHost groups={groups.data} onAdded={refresh} />}
      </Part>

      <Part
        id="groups"
        heading="Host groups"
        rows={groups.data}
        emptyTitle="No host group"
        cli="npx gatehouse access groups create production"
        path="host-groups"
        body='{"name": "production"}'
        table={(rows) => <GroupsTable groups={rows} onRemoved={refresh} />}
      >
        <AddGroup onAdded={refresh} />
      </Part>
    </section>
  );
}

/**
 * One kind of thing on the page (rules, hosts, host groups): its table, or when there is none yet how to make one with the
 * CLI and with curl (a POST of `body` to /v1/os/<path>); then the form that adds one (`children`).
 */
function Part<T>({
  id,
  heading,
  rows,
  emptyTitle,
  cli,
  path,
  body,
  table,
  children,
}: {
  id: string;
  heading: string;
  rows: T[] | undefined;
  emptyTitle: string;
  cli: string;
  path: string;
  body: string;
  table: (rows: T[]) => ReactNode;
  children: ReactNode;
}) {
  return (
    <section className="panel" aria-labelledby={id}>
      <h2 id={id}>{heading}</h2>
      {rows && rows.length === 0 && (
        <EmptyState title={emptyTitle} cli={cli} curl={curl(`/v1/os/${path}`, { method: 'POST', body })} />
      )}
      {rows && rows.length > 0 && table(rows)}
      {children}
    </section>
  );
}

function RulesTable({
  rules,
  targetName,
  onRemoved,
}: {
  rules: Rule[];
  targetName: (rule: Rule) => string | undefined;
  onRemoved: () => void;
}) {
  const trpc = app.useTRPC();
  const remove = useMutation(trpc.access.rules.delete.mutationOptions({ onSuccess: onRemoved }));
  return (
    <>
      <ErrorNotice error={remove.error} title="The rule was not removed" />
      <ListTable
        caption="Access rules, newest first"
        columns={['Effect', 'Who', 'Where', 'Created']}
        actions="Actions"
        rows={rules}
        rowKey={(rule) => rule.id}
      >
        {(rule) => {
          const target = targetName(rule) ?? rule.target_id;
          const label = `${rule.effect} ${rule.subject_kind} ${rule.subject_id} on ${target}`;
          return (
            <>
              <td>
                <span className={`badge ${rule.effect}`}>{rule.effect}</span>
              </td>
              <td>
                {rule.subject_kind === 'user' ? 'user' : 'members of organization'} <code>{rule.subject_id}</code>
              </td>
              <td>
                {rule.target_kind === 'host' ? 'host' : 'every host in group'} {target}
              </td>
              <td>{when(rule.created_at)}</td>
              <td className="row-actions">
                <ConfirmButton
                  label="Remove"
                  ariaLabel={`Remove the rule: ${label}`}
                  title="Remove this rule?"
                  confirmLabel="Remove the rule"
                  isDisabled={remove.isPending}
                  onConfirm={() => remove.mutate({ id: rule.id })}
                >
                  <p>It no longer counts from the next access check: {label}.</p>
                </ConfirmButton>
              </td>
            </>
          );
        }}
      </ListTable>
    </>
  );
}

function HostsTable({
  hosts,
  groupName,
  onRemoved,
}: {
  hosts: Host[];
  groupName: (id: string | null) => string | undefined;
  onRemoved: () => void;
}) {
  const trpc = app.useTRPC();
  const remove = useMutation(trpc.access.hosts.delete.mutationOptions({ onSuccess: onRemoved }));
  return (
    <>
      <ErrorNotice error={remove.error} title="The host was not removed" />
      <ListTable
        caption="Hosts, newest first"
        columns={['Name', 'Group', 'Id']}
        actions="Actions"
        rows={hosts}
        rowKey={(host) => host.id}
      >
        {(host) => (
          <>
            <td>{host.name}</td>
            <td>{groupName(host.host_group_id) ?? '—'}</td>
            <td>
              <code>{host.id}</code> <CopyButton value={host.id} label={`Copy the id of ${host.name}`} />
            </td>
            <td className="row-actions">
              <ConfirmButton
                label="Remove"
                ariaLabel={`Remove the host ${host.name}`}
                title={`Remove ${host.name}?`}
                confirmLabel="Remove the host"
                isDisabled={remove.isPending}
                onConfirm={() => remove.mutate({ id: host.id })}
              >
                <p>The rules that name this host are removed with it.</p>
              </ConfirmButton>
            </td>
          </>
        )}
      </ListTable>
    </>
  );
}

function GroupsTable({ groups, onRemoved }: { groups: Group[]; onRemoved: () => void }) {
  const trpc = app.useTRPC();
  const remove = useMutation(trpc.access.hostGroups.delete.mutationOptions({ onSuccess: onRemoved }));
  return (
    <>
      <ErrorNotice error={remove.error} title="The group was not removed" />
      <ListTable
        caption="Host groups, newest first"
        columns={['Name', 'Created']}
        actions="Actions"
        rows={groups}
        rowKey={(group) => group.id}
      >
        {(group) => (
          <>
            <td>{group.name}</td>
            <td>{when(group.created_at)}</td>
            <td className="row-actions">
              <ConfirmButton
                label="Remove"
                ariaLabel={`Remove the group ${group.name}`}
                title={`Remove ${group.name}?`}
                confirmLabel="Remove the group"
                isDisabled={remove.isPending}
                onConfirm={() => remove.mutate({ id: group.id })}
              >
                <p>The rules that name this group are removed with it; its hosts stay, in no group.</p>
              </ConfirmButton>
            </td>
          </>
        )}
      </ListTable>
    </>
  );
}

/** A choice from a list (a host, a group), keyboard and screen-reader usable (React Aria's Select). */
function Choice({
  label,
  items,
  value,
  onChange,
  isRequired,
  description,
}: {
  label: string;
  items: Array<{ id: string; name: string }>;
  value: string | null;
  onChange: (id: string | null) => void;
  isRequired?: boolean;
  description?: string;
}) {
  return (
    <Select
      className="field select"
      selectedKey={value}
      onSelectionChange={(key) => onChange(key === null ? null : String(key))}
      isRequired={isRequired}
      placeholder="Choose…"
    >
      <Label>{label}</Label>
      <Button className="button select-button">
        <SelectValue />
        <span aria-hidden="true">▾</span>
      </Button>
      {description && <Text slot="description">{description}</Text>}
      <Popover className="popover">
        <ListBox className="listbox" items={items}>
          {(item) => (
            <ListBoxItem id={item.id} className="option" textValue={item.name}>
              {item.name}
            </ListBoxItem>
          )}
        </ListBox>
      </Popover>
    </Select>
  );
}

function AddRule({ groups, hosts, onAdded }: { groups: Group[]; hosts: Host[]; onAdded: () => void }) {
  const trpc = app.useTRPC();
  const [effect, setEffect] = useState<'allow' | 'deny'>('allow');
  const [subjectKind, setSubjectKind] = useState<'user' | 'organization'>('user');
  const [subjectId, setSubjectId] = useState('');
  const [targetKind, setTargetKind] = useState<'host' | 'host_group'>('host');
  const [targetId, setTargetId] = useState<string | null>(null);
  const create = useMutation(
    trpc.access.rules.create.mutationOptions({
      onSuccess: () => {
        setSubjectId('');
        setTargetId(null);
        onAdded();
      },
    }),
  );
  const targets = targetKind === 'host' ? hosts : groups;
  return (
    <Form
      aria-labelledby="add-rule"
      onSubmit={(event) => {
        event.preventDefault();
        if (targetId) {
          create.mutate({
            effect,
            subject_kind: subjectKind,
            subject_id: subjectId.trim(),
            target_kind: targetKind,
            target_id: targetId,
          });
        }
      }}
    >
      <h3 id="add-rule">Add a rule</h3>
      <RadioGroup className="field radios" value={effect} onChange={(v) => setEffect(v === 'deny' ? 'deny' : 'allow')}>
        <Label>Effect</Label>
        <Radio value="allow">Allow</Radio>
        <Radio value="deny">Deny</Radio>
      </RadioGroup>
      <RadioGroup
        className="field radios"
        value={subjectKind}
        onChange={(v) => setSubjectKind(v === 'organization' ? 'organization' : 'user')}
      >
        <Label>Who</Label>
        <Radio value="user">A user</Radio>
        <Radio value="organization">Every member of an organization</Radio>
      </RadioGroup>
      <TextField className="field" isRequired value={subjectId} onChange={setSubjectId} maxLength={36}>
        <Label>{subjectKind === 'user' ? 'User id' : 'Organization id'}</Label>
        <Input placeholder="01937c4e-8a2b-7c3d-9e4f-5a6b7c8d9e0f" />
        <Text slot="description">The id from the {subjectKind === 'user' ? 'Users' : 'Organizations'} page.</Text>
      </TextField>
      <RadioGroup
        className="field radios"
        value={targetKind}
        onChange={(v) => {
          setTargetKind(v === 'host_group' ? 'host_group' : 'host');
          setTargetId(null);
        }}
      >
        <Label>Where</Label>
        <Radio value="host">One host</Radio>
        <Radio value="host_group">Every host in a group</Radio>
      </RadioGroup>
      <Choice
        label={targetKind === 'host' ? 'Host' : 'Host group'}
        items={targets}
        value={targetId}
        onChange={setTargetId}
        isRequired
        description={targets.length === 0 ? `Add a ${targetKind === 'host' ? 'host' : 'group'} below first.` : undefined}
      />
      <Button type="submit" className="button primary" isDisabled={create.isPending || !targetId}>
        {create.isPending ? 'Adding…' : 'Add the rule'}
      </Button>
      <ErrorNotice error={create.error} title="The rule was not added" />
    </Form>
  );
}

function AddHost({ groups, onAdded }: { groups: Group[]; onAdded: () => void }) {
  const trpc = app.useTRPC();
  const [name, setName] = useState('');
  const [group, setGroup] = useState<string | null>(null);
  const create = useMutation(
    trpc.access.hosts.create.mutationOptions({
      onSuccess: () => {
        setName('');
        setGroup(null);
        onAdded();
      },
    }),
  );
  return (
    <Form
      aria-labelledby="add-host"
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate({ name, ...(group ? { host_group_id: group } : {}) });
      }}
    >
      <h3 id="add-host">Add a host</h3>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Host name</Label>
        <Input placeholder="web-1" />
      </TextField>
      {groups.length > 0 && <Choice label="In the group (optional)" items={groups} value={group} onChange={setGroup} />}
      <Button type="submit" className="button primary" isDisabled={create.isPending}>
        {create.isPending ? 'Adding…' : 'Add the host'}
      </Button>
      <ErrorNotice error={create.error} title="The host was not added" />
    </Form>
  );
}

function AddGroup({ onAdded }: { onAdded: () => void }) {
  const trpc = app.useTRPC();
  const [name, setName] = useState('');
  const create = useMutation(
    trpc.access.hostGroups.create.mutationOptions({
      onSuccess: () => {
        setName('');
        onAdded();
      },
    }),
  );
  return (
    <Form
      aria-labelledby="add-group"
      onSubmit={(event) => {
        event.preventDefault();
        create.mutate({ name });
      }}
    >
      <h3 id="add-group">Add a host group</h3>
      <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
        <Label>Group name</Label>
        <Input placeholder="production" />
      </TextField>
      <Button type="submit" className="button primary" isDisabled={create.isPending}>
        {create.isPending ? 'Adding…' : 'Add the group'}
      </Button>
      <ErrorNotice error={create.error} title="The group was not added" />
    </Form>
  );
}
