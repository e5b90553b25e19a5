import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Switch, Text, TextField } from 'react-aria-components';
import { app } from '../api.ts';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { ScrollRegion } from '../components/scroll-region.tsx';
import { type EventsSearch, PAGE_SIZE } from '../search.ts';

/** How often the live view asks for newer events. */
const LIVE_MS = 5_000;

/** An ISO time as the value of a `datetime-local` field (local time, to the minute), and back. */
const toLocal = (iso: string | undefined) => {
  if (!iso) return '';
  const d = new Date(iso);
  return new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
};
const fromLocal = (value: string) => (value ? new Date(value).toISOString() : undefined);

/**
 * The application's audit log, newest first: filters by event type, actor and time in the URL, server paging, each
 * entry expandable to its JSON, and a live view that polls for newer entries every few seconds.
 */
export function EventsPage() {
  const { appId } = useParams({ from: '/apps/$appId/events' });
  const search = useSearch({ from: '/apps/$appId/events' });
  const { action, actor, since, until, offset = 0, live } = search;
  const navigate = useNavigate({ from: '/apps/$appId/events' });
  const trpc = app.useTRPC();
  const filtered = Boolean(action || actor || since || until);
  const entries = useQuery({
    ...trpc.auditLogs.list.queryOptions({ action, actor_id: actor, since, until, limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
    // Live: the first page is asked again every few seconds (a later page would shift under the reader).
    refetchInterval: live && offset === 0 ? LIVE_MS : false,
  });
  const page = entries.data;
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setOpen((prev) => {
      const next = new Set(prev);
      if (next.has(id)) next.delete(id);
      else next.add(id);
      return next;
    });
  const set = (changes: Partial<EventsSearch>) => void navigate({ search: (prev) => ({ ...prev, ...changes }) });

  return (
    <section>
      <h1>Events</h1>
      <p>The audit log: who did what, when and from where. Console actions are listed with the operator as actor.</p>
      <Filters key={`${action}|${actor}|${since}|${until}`} search={search} onApply={(f) => set({ ...f, offset: undefined })} />
      <Switch
        className="switch"
        isSelected={Boolean(live)}
        onChange={(on) => set({ live: on ? true : undefined, offset: undefined })}
      >
        <span className="switch-indicator" aria-hidden="true" />
        Live: show new events as they happen
      </Switch>
      <p role="status" className="meta">
        {live && offset === 0 ? `Live: checking for new events every ${LIVE_MS / 1000} seconds.` : ''}
      </p>
      <ErrorNotice error={entries.error} title="The events could not be listed" />
      {entries.isPending && <p role="status">Loading the events…</p>}
      {page && page.total === 0 && !filtered && (
        <EmptyState
          title="No event yet"
          cli="npx gatehouse audit-logs list --action 'user.*'"
          curl={curl('/v1/audit-logs?action=user.*&limit=25')}
        >
          <p>Every change to the application's users, organizations and settings is logged here.</p>
        </EmptyState>
      )}
      {page && page.total === 0 && filtered && <p role="status">No event matches these filters.</p>}
      {page && page.audit_logs.length > 0 && (
        <ListTable
          caption="Events, newest first"
          columns={['Time', 'Event', 'Actor', 'Target']}
          actions="Details"
          rows={page.audit_logs}
          rowKey={(entry) => entry.id}
          className="events"
          busy={entries.isFetching}
          detail={(entry) =>
            open.has(entry.id) && (
              <tr id={`event-${entry.id}`} className="event-json">
                <td colSpan={5}>
                  <ScrollRegion label={`The JSON of ${entry.action}`} className="json">
                    <pre>
                      <code>{JSON.stringify(entry, null, 2)}</code>
                    </pre>
                  </ScrollRegion>
                </td>
              </tr>
            )
          }
          pager={{ label: 'Pages of events', offset: page.offset, total: page.total, previous: 'Newer', next: 'Older' }}
        >
          {(entry) => {
            const expanded = open.has(entry.id);
            return (
              <>
                <td>
                  <time dateTime={entry.occurred_at}>{new Date(entry.occurred_at).toLocaleString()}</time>
                </td>
                <td>
                  <Button className="link-button" onPress={() => set({ action: entry.action, offset: undefined })}>
                    <code>{entry.action}</code>
                  </Button>
                </td>
                <td>
                  <span className="badge">{entry.actor.type}</span>{' '}
                  <Button className="link-button" onPress={() => set({ actor: entry.actor.id, offset: undefined })}>
                    <code>{entry.actor.id}</code>
                  </Button>
                </td>
                <td>
                  {entry.target ? (
                    entry.target.type === 'user' ? (
                      <Link to="/apps/$appId/users/$userId" params={{ appId, userId: entry.target.id }}>
                        user <code>{entry.target.id}</code>
                      </Link>
                    ) : (
                      <span>
                        {entry.target.type} <code>{entry.target.id}</code>
                      </span>
                    )
                  ) : (
                    '—'
                  )}
                </td>
                <td>
                  <Button
                    className="button small"
                    aria-expanded={expanded}
                    aria-controls={`event-${entry.id}`}
                    aria-label={`${expanded ? 'Hide' : 'Show'} JSON of ${entry.action} at ${new Date(entry.occurred_at).toLocaleString()}`}
                    onPress={() => toggle(entry.id)}
                  >
                    {expanded ? 'Hide JSON' : 'Show JSON'}
                  </Button>
                </td>
              </>
            );
          }}
        </ListTable>
      )}
    </section>
  );
}

type FilterValues = Pick<EventsSearch, 'action' | 'actor' | 'since' | 'until'>;

/** The filters, applied together (to the URL) by the button; "Clear" removes them. */
function Filters({ search, onApply }: { search: EventsSearch; onApply: (filters: FilterValues) => void }) {
  const [action, setAction] = useState(search.action ?? '');
  const [actor, setActor] = useState(search.actor ?? '');
  const [since, setSince] = useState(toLocal(search.since));
  const [until, setUntil] = useState(toLocal(search.until));
  return (
    <Form
      className="filters"
      aria-label="Filter the events"
      onSubmit={(event) => {
        event.preventDefault();
        onApply({
          action: action.trim() || undefined,
          actor: actor.trim() || undefined,
          since: fromLocal(since),
          until: fromLocal(until),
        });
      }}
    >
      <TextField className="field" value={action} onChange={setAction} maxLength={64}>
        <Label>Event type</Label>
        <Input placeholder="user.created or user.*" />
        <Text slot="description">An event type, or a prefix ending in .*</Text>
      </TextField>
      <TextField className="field" value={actor} onChange={setActor} maxLength={255}>
        <Label>Actor id</Label>
        <Input />
      </TextField>
      <TextField className="field" value={since} onChange={setSince}>
        <Label>From</Label>
        <Input type="datetime-local" />
      </TextField>
      <TextField className="field" value={until} onChange={setUntil}>
        <Label>Until</Label>
        <Input type="datetime-local" />
      </TextField>
      <div className="actions">
        <Button type="submit" className="button primary">
          Apply the filters
        </Button>
        <Button
          className="button"
          onPress={() => onApply({ action: undefined, actor: undefined, since: undefined, until: undefined })}
        >
          Clear
        </Button>
      </div>
    </Form>
  );
}
