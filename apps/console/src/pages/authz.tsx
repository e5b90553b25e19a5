import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useNavigate, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Radio, RadioGroup, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { type AuthzQuestion, type AuthzSearch, PAGE_SIZE } from '../search.ts';

type Expansion = Outputs['authz']['expand'];

const FROM = '/apps/$appId/authz';
const tupleText = (t: { object: string; relation: string; subject: string }) => `${t.object}#${t.relation}@${t.subject}`;

/**
 * The application's relationship tuples (filters and page in the URL; write one, delete one) and an explorer that asks
 * check (object, relation, subject → allowed or denied) or expand (object, relation → the tree of usersets). The
 * explorer's question is in the URL too, so a link to the page asks it again.
 */
export function AuthzPage() {
  const search = useSearch({ from: FROM });
  const navigate = useNavigate({ from: FROM });
  const set = (changes: Partial<AuthzSearch>) => void navigate({ search: (prev) => ({ ...prev, ...changes }) });
  return (
    <section>
      <h1>Authorization</h1>
      <p>
        Relationship tuples read <code>object#relation@subject</code>: a subject is a user (<code>user:&lt;user id&gt;</code>) or
        everyone with a relation to an object (<code>team:eng#member</code>).
      </p>
      <Explorer
        key={`${search.ask}|${search.ask_object}|${search.ask_relation}|${search.ask_subject}`}
        search={search}
        set={set}
      />
      <Tuples search={search} set={set} />
    </section>
  );
}

/** The tuple list with its filters, the write form, and a delete on each row. */
function Tuples({ search, set }: { search: AuthzSearch; set: (changes: Partial<AuthzSearch>) => void }) {
  const { namespace, object, relation, subject, offset = 0 } = search;
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const filtered = Boolean(namespace || object || relation || subject);
  const tuples = useQuery({
    ...trpc.authz.tuples.list.queryOptions({ namespace, object, relation, subject, limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.authz.tuples.list.queryKey() });
  const remove = useMutation(trpc.authz.tuples.write.mutationOptions({ onSuccess: refresh }));
  const [removed, setRemoved] = useState<string | null>(null);
  const page = tuples.data;

  return (
    <section aria-labelledby="tuples-heading">
      <h2 id="tuples-heading">Tuples</h2>
      <TupleFilters
        key={`${namespace}|${object}|${relation}|${subject}`}
        search={search}
        onApply={(f) => set({ ...f, offset: undefined })}
      />
      <ErrorNotice error={tuples.error} title="The tuples could not be listed" />
      {tuples.isPending && <p role="status">Loading the tuples…</p>}
      {page && page.total === 0 && !filtered && (
        <EmptyState
          title="No tuple yet"
          cli="npx gatehouse authz write 'doc:readme#viewer@team:eng#member'"
          curl={curl('/v1/authz/tuples', {
            method: 'POST',
            body: '{"writes": [{"object": "doc:readme", "relation": "viewer", "subject": "team:eng#member"}]}',
          })}
        >
          <p>Write the first one below.</p>
        </EmptyState>
      )}
      {page && page.total === 0 && filtered && <p role="status">No tuple matches these filters.</p>}
      {page && page.tuples.length > 0 && (
        <ListTable
          caption="Tuples, newest first"
          columns={['Object', 'Relation', 'Subject', 'Written']}
          actions="Actions"
          rows={page.tuples}
          rowKey={(tuple) => tupleText(tuple)}
          busy={tuples.isFetching}
          pager={{ label: 'Pages of tuples', offset: page.offset, total: page.total }}
        >
          {(tuple) => (
            <>
              <td>
                <code>{tuple.object}</code>
              </td>
              <td>
                <code>{tuple.relation}</code>
              </td>
              <td>
                <code>{tuple.subject}</code>
              </td>
              <td>{new Date(tuple.created_at).toLocaleString()}</td>
              <td>
                <ConfirmButton
                  label="Delete"
                  ariaLabel={`Delete ${tupleText(tuple)}`}
                  title="Delete this tuple?"
                  confirmLabel="Delete the tuple"
                  isDisabled={remove.isPending}
                  onConfirm={() => {
                    setRemoved(tupleText(tuple));
                    remove.mutate({
                      deletes: [{ object: tuple.object, relation: tuple.relation, subject: tuple.subject }],
                    });
                  }}
                >
                  <p>
                    <code>{tupleText(tuple)}</code> stops counting at once: checks that relied on it answer denied.
                  </p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
      <p role="status" className="status">
        {remove.isSuccess && removed ? `Deleted ${removed}.` : ''}
      </p>
      <ErrorNotice error={remove.error} title="The tuple was not deleted" />
      <WriteTuple onWritten={refresh} />
    </section>
  );
}

type TupleFilterValues = Pick<AuthzSearch, 'namespace' | 'object' | 'relation' | 'subject'>;

function TupleFilters({ search, onApply }: { search: AuthzSearch; onApply: (filters: TupleFilterValues) => void }) {
  const [namespace, setNamespace] = useState(search.namespace ?? '');
  const [object, setObject] = useState(search.object ?? '');
  const [relation, setRelation] = useState(search.relation ?? '');
  const [subject, setSubject] = useState(search.subject ?? '');
  return (
    <Form
      className="filters"
      aria-label="Filter the tuples"
      onSubmit={(event) => {
        event.preventDefault();
        onApply({
          namespace: namespace.trim() || undefined,
          object: object.trim() || undefined,
          relation: relation.trim() || undefined,
          subject: subject.trim() || undefined,
        });
      }}
    >
      <TextField className="field" value={namespace} onChange={setNamespace} maxLength={64}>
        <Label>Object type</Label>
        <Input placeholder="doc" />
      </TextField>
      <TextField className="field" value={object} onChange={setObject} maxLength={320}>
        <Label>Object</Label>
        <Input placeholder="doc:readme" />
      </TextField>
      <TextField className="field" value={relation} onChange={setRelation} maxLength={64}>
        <Label>Relation</Label>
        <Input placeholder="viewer" />
      </TextField>
      <TextField className="field" value={subject} onChange={setSubject} maxLength={320}>
        <Label>Subject</Label>
        <Input placeholder="user:<user id>" />
      </TextField>
      <div className="actions">
        <Button type="submit" className="button primary">
          Filter the tuples
        </Button>
        <Button
          className="button"
          onPress={() => onApply({ namespace: undefined, object: undefined, relation: undefined, subject: undefined })}
        >
          Clear
        </Button>
      </div>
    </Form>
  );
}

function WriteTuple({ onWritten }: { onWritten: () => void }) {
  const trpc = app.useTRPC();
  const [object, setObject] = useState('');
  const [relation, setRelation] = useState('');
  const [subject, setSubject] = useState('');
  const write = useMutation(
    trpc.authz.tuples.write.mutationOptions({
      onSuccess: () => {
        setObject('');
        setRelation('');
        setSubject('');
        onWritten();
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="write-tuple">
      <h2 id="write-tuple">Write a tuple</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          write.mutate({ writes: [{ object: object.trim(), relation: relation.trim(), subject: subject.trim() }] });
        }}
      >
        <TextField className="field" isRequired value={object} onChange={setObject} maxLength={320}>
          <Label>Object of the tuple</Label>
          <Input placeholder="doc:readme" />
          <Text slot="description">namespace:id</Text>
        </TextField>
        <TextField className="field" isRequired value={relation} onChange={setRelation} maxLength={64}>
          <Label>Relation of the tuple</Label>
          <Input placeholder="viewer" />
        </TextField>
        <TextField className="field" isRequired value={subject} onChange={setSubject} maxLength={320}>
          <Label>Subject of the tuple</Label>
          <Input placeholder="team:eng#member" />
          <Text slot="description">user:&lt;user id&gt;, or namespace:id#relation for everyone with that relation</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={write.isPending}>
          {write.isPending ? 'Writing…' : 'Write the tuple'}
        </Button>
      </Form>
      <p role="status" className="status">
        {write.data
          ? write.data.written === 1
            ? `Written (consistency token ${write.data.consistency_token}).`
            : 'That tuple was already there: nothing changed.'
          : ''}
      </p>
      <ErrorNotice error={write.error} title="The tuple was not written" />
    </section>
  );
}

/** The explorer: its form writes the question to the URL; the answer is read from the question in the URL. */
function Explorer({ search, set }: { search: AuthzSearch; set: (changes: Partial<AuthzSearch>) => void }) {
  const [question, setQuestion] = useState<AuthzQuestion>(search.ask ?? 'check');
  const [object, setObject] = useState(search.ask_object ?? '');
  const [relation, setRelation] = useState(search.ask_relation ?? '');
  const [subject, setSubject] = useState(search.ask_subject ?? '');
  return (
    <section className="panel" aria-labelledby="explorer">
      <h2 id="explorer">Explore</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          set({
            ask: question,
            ask_object: object.trim() || undefined,
            ask_relation: relation.trim() || undefined,
            ask_subject: question === 'check' ? subject.trim() || undefined : undefined,
          });
        }}
      >
        <RadioGroup
          className="field radios"
          value={question}
          onChange={(value) => setQuestion(value === 'expand' ? 'expand' : 'check')}
        >
          <Label>Question</Label>
          <Radio value="check">Check: does a subject have a relation to an object?</Radio>
          <Radio value="expand">Expand: who has a relation to an object?</Radio>
        </RadioGroup>
        <TextField className="field" isRequired value={object} onChange={setObject} maxLength={320}>
          <Label>Object to ask about</Label>
          <Input placeholder="doc:readme" />
        </TextField>
        <TextField className="field" isRequired value={relation} onChange={setRelation} maxLength={64}>
          <Label>Relation to ask about</Label>
          <Input placeholder="viewer" />
        </TextField>
        {question === 'check' && (
          <TextField className="field" isRequired value={subject} onChange={setSubject} maxLength={320}>
            <Label>Subject to check</Label>
            <Input placeholder="user:<user id>" />
          </TextField>
        )}
        <Button type="submit" className="button primary">
          {question === 'check' ? 'Check' : 'Expand'}
        </Button>
      </Form>
      {search.ask === 'check' && search.ask_object && search.ask_relation && search.ask_subject && (
        <CheckAnswer object={search.ask_object} relation={search.ask_relation} subject={search.ask_subject} />
      )}
      {search.ask === 'expand' && search.ask_object && search.ask_relation && (
        <ExpandAnswer object={search.ask_object} relation={search.ask_relation} />
      )}
    </section>
  );
}

/** Check and expand are POSTs (mutations) that change nothing: asked as queries, keyed by their question. */
function CheckAnswer({ object, relation, subject }: { object: string; relation: string; subject: string }) {
  const client = app.useTRPCClient();
  const input = { object, relation, subject };
  const answer = useQuery({
    queryKey: ['authz.check', input],
    queryFn: () => client.authz.check.mutate(input),
    staleTime: 0,
  });
  if (answer.isPending) return <p role="status">Checking…</p>;
  if (answer.error) return <ErrorNotice error={answer.error} title="The check could not be answered" />;
  return (
    <div className={`notice ${answer.data.allowed ? 'success' : 'denied'}`} role="status">
      <p className="notice-title">{answer.data.allowed ? 'Allowed' : 'Denied'}</p>
      <p>
        <code>{subject}</code> {answer.data.allowed ? 'has' : 'does not have'} the relation <code>{relation}</code> to{' '}
        <code>{object}</code>.
      </p>
    </div>
  );
}

function ExpandAnswer({ object, relation }: { object: string; relation: string }) {
  const client = app.useTRPCClient();
  const input = { object, relation };
  const answer = useQuery({
    queryKey: ['authz.expand', input],
    queryFn: () => client.authz.expand.mutate(input),
    staleTime: 0,
  });
  if (answer.isPending) return <p role="status">Expanding…</p>;
  if (answer.error) return <ErrorNotice error={answer.error} title="The relation could not be expanded" />;
  const root = `${object}#${relation}`;
  return (
    <section className="expand-tree" aria-labelledby="expand-heading">
      <h3 id="expand-heading">
        Who has <code>{relation}</code> on <code>{object}</code>
      </h3>
      <ul aria-label={`The subject tree of ${root}`}>
        <Userset expansion={answer.data} userset={root} path={[]} />
      </ul>
    </section>
  );
}

/** One userset and its direct subjects; a subject set opens to its own subjects (once per branch: tuples may loop). */
function Userset({ expansion, userset, path }: { expansion: Expansion; userset: string; path: readonly string[] }) {
  const subjects = expansion.usersets.find((u) => u.userset === userset)?.subjects ?? [];
  const here = [...path, userset];
  return (
    <li>
      <code>{userset}</code>{' '}
      <span className="meta-inline">
        {subjects.length === 0 ? 'no subject' : `${subjects.length} direct subject${subjects.length === 1 ? '' : 's'}`}
      </span>
      {subjects.length > 0 && (
        <ul aria-label={`Subjects of ${userset}`}>
          {subjects.map((subject) =>
            subject.includes('#') ? (
              here.includes(subject) ? (
                <li key={subject}>
                  <code>{subject}</code> <span className="meta-inline">(a loop: already above)</span>
                </li>
              ) : (
                <Userset key={subject} expansion={expansion} userset={subject} path={here} />
              )
            ) : (
              <li key={subject}>
                <code>{subject}</code>
              </li>
            ),
          )}
        </ul>
      )}
    </li>
  );
}
