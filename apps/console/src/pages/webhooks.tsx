import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, Text, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { CopyButton } from '../components/copy-button.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { ScrollRegion } from '../components/scroll-region.tsx';
import { splitList, when } from '../format.ts';
import { PAGE_SIZE } from '../search.ts';

type Endpoint = Outputs['webhooks']['list'][number];

/** While a delivery is still being tried, its list is asked again this often. */
const PENDING_MS = 2_000;

/**
 * The application's webhook endpoints: create (event types), enable and disable, send a test event, rotate the secret
 * (shown once), delete; an endpoint's deliveries (`?endpoint=`) with each attempt (`?delivery=`), retry one, recover
 * the failed ones since a time.
 */
export function WebhooksPage() {
  const { endpoint: selected } = useSearch({ from: '/apps/$appId/webhooks' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const endpoints = useQuery(trpc.webhooks.list.queryOptions());
  const [secret, setSecret] = useState<{ url: string; secret: string; rotated: boolean } | null>(null);
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.pathKey() });
  const update = useMutation(trpc.webhooks.update.mutationOptions({ onSuccess: refresh }));
  const remove = useMutation(trpc.webhooks.delete.mutationOptions({ onSuccess: refresh }));
  const rotate = useMutation(
    trpc.webhooks.rotateSecret.mutationOptions({
      onSuccess: (e) => setSecret({ url: e.url, secret: e.secret, rotated: true }),
    }),
  );
  const test = useMutation(trpc.webhooks.test.mutationOptions({ onSuccess: refresh }));
  const current = endpoints.data?.find((e) => e.id === selected);

  return (
    <section>
      <h1>Webhooks</h1>
      <p>Gatehouse sends the application's events to these addresses, signed with each endpoint's secret.</p>
      {endpoints.isPending && <p role="status">Loading the endpoints…</p>}
      <ErrorNotice error={endpoints.error} title="The endpoints could not be listed" />
      <ErrorNotice error={update.error} title="The endpoint was not changed" />
      <ErrorNotice error={remove.error} title="The endpoint was not deleted" />
      <ErrorNotice error={rotate.error} title="The secret was not rotated" />
      <ErrorNotice error={test.error} title="The test event was not sent" />
      {test.data && (
        <p className="notice success" role="status">
          Test event queued for delivery to {endpoints.data?.find((e) => e.id === test.data.endpoint_id)?.url}.{' '}
          <Link from="/apps/$appId/webhooks" search={{ endpoint: test.data.endpoint_id }}>
            See its deliveries
          </Link>
        </p>
      )}
      {secret && <SecretNotice {...secret} />}
      {endpoints.data && (
        <ListTable
          caption="Webhook endpoints"
          columns={['Address', 'Events', 'Status']}
          actions="Actions"
          rows={endpoints.data}
          rowKey={(e) => e.id}
          current={(e) => e.id === selected}
          empty={
            <EmptyState
              title="No webhook endpoint"
              cli="npx gatehouse webhooks create https://example.com/hooks --event-types user.created"
              curl={curl('/v1/webhooks', {
                method: 'POST',
                body: '{"url": "https://example.com/hooks", "event_types": ["user.created"]}',
              })}
            />
          }
        >
          {(e) => (
            <>
              <td>
                <Link from="/apps/$appId/webhooks" search={{ endpoint: e.id }} aria-label={`Deliveries to ${e.url}`}>
                  {e.url}
                </Link>
                {e.description && <div className="meta">{e.description}</div>}
              </td>
              <td>{e.event_types.length ? e.event_types.join(' ') : 'every kind'}</td>
              <td>
                <span className={`badge ${e.status}`}>{e.status}</span>
                {e.disabled_reason && <span className="meta"> ({e.disabled_reason})</span>}
              </td>
              <td className="row-actions">
                <Button
                  className="button small"
                  aria-label={`Send a test event to ${e.url}`}
                  isDisabled={test.isPending}
                  onPress={() => test.mutate({ id: e.id })}
                >
                  Send a test event
                </Button>
                <Button
                  className="button small"
                  aria-label={`${e.status === 'active' ? 'Disable' : 'Enable'} ${e.url}`}
                  isDisabled={update.isPending}
                  onPress={() => update.mutate({ id: e.id, status: e.status === 'active' ? 'disabled' : 'active' })}
                >
                  {e.status === 'active' ? 'Disable' : 'Enable'}
                </Button>
                <ConfirmButton
                  label="Rotate secret"
                  ariaLabel={`Rotate secret of ${e.url}`}
                  title="Rotate the signing secret?"
                  confirmLabel="Rotate the secret"
                  isDisabled={rotate.isPending}
                  onConfirm={() => rotate.mutate({ id: e.id })}
                >
                  <p>Deliveries are signed with the new secret at once: update your receiver with it.</p>
                </ConfirmButton>
                <ConfirmButton
                  label="Delete"
                  ariaLabel={`Delete ${e.url}`}
                  title={`Delete ${e.url}?`}
                  confirmLabel="Delete the endpoint"
                  isDisabled={remove.isPending}
                  onConfirm={() => remove.mutate({ id: e.id })}
                >
                  <p>No more events are sent to it, and its deliveries are no longer listed. This cannot be undone.</p>
                </ConfirmButton>
              </td>
            </>
          )}
        </ListTable>
      )}
      {current && <Deliveries endpoint={current} />}
      {selected && endpoints.data && !current && <p role="status">That endpoint no longer exists.</p>}
      <CreateEndpoint onCreated={(e) => setSecret({ url: e.url, secret: e.secret, rotated: false })} />
    </section>
  );
}

function SecretNotice({ url, secret, rotated }: { url: string; secret: string; rotated: boolean }) {
  return (
    <div className="notice success" role="status">
      <p className="notice-title">
        {rotated ? `New secret of ${url}` : `Endpoint ${url} created`}. Copy its signing secret now: it is never shown again.
      </p>
      <p className="secret">
        <code>{secret}</code> <CopyButton value={secret} label="Copy the signing secret" />
      </p>
    </div>
  );
}

function CreateEndpoint({ onCreated }: { onCreated: (e: Outputs['webhooks']['create']) => void }) {
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState('');
  const create = useMutation(
    trpc.webhooks.create.mutationOptions({
      onSuccess: (created) => {
        setUrl('');
        setDescription('');
        setTypes('');
        onCreated(created);
        void queryClient.invalidateQueries({ queryKey: trpc.webhooks.list.queryKey() });
      },
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-endpoint">
      <h2 id="create-endpoint">Add an endpoint</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({ url, description, event_types: splitList(types) });
        }}
      >
        <TextField className="field" type="url" isRequired value={url} onChange={setUrl} maxLength={2048}>
          <Label>Address</Label>
          <Input placeholder="https://example.com/hooks" />
        </TextField>
        <TextField className="field" value={description} onChange={setDescription} maxLength={1024}>
          <Label>Description</Label>
          <Input />
        </TextField>
        <TextField className="field" value={types} onChange={setTypes}>
          <Label>Event types</Label>
          <Input placeholder="user.created session.created" />
          <Text slot="description">Separated by spaces; leave empty to receive every kind.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Adding…' : 'Add the endpoint'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The endpoint was not added" />
    </section>
  );
}

/** One endpoint's deliveries, newest first, paged in the URL; a delivery's attempts; retry; recover. */
function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const { offset = 0, delivery } = useSearch({ from: '/apps/$appId/webhooks' });
  const trpc = app.useTRPC();
  const queryClient = useQueryClient();
  const deliveries = useQuery({
    ...trpc.webhooks.deliveries.list.queryOptions({ id: endpoint.id, limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
    refetchInterval: (query) => (query.state.data?.deliveries.some((d) => d.status === 'pending') ? PENDING_MS : false),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: trpc.webhooks.deliveries.pathKey() });
  const retry = useMutation(trpc.webhooks.deliveries.retry.mutationOptions({ onSuccess: refresh }));
  const page = deliveries.data;

  return (
    <section className="panel" aria-labelledby="deliveries">
      <h2 id="deliveries">Deliveries to {endpoint.url}</h2>
      <ErrorNotice error={deliveries.error} title="The deliveries could not be listed" />
      <ErrorNotice error={retry.error} title="The delivery was not retried" />
      {deliveries.isPending && <p role="status">Loading the deliveries…</p>}
      {page && page.total === 0 && <p>No delivery yet: send a test event to try the endpoint.</p>}
      {page && page.deliveries.length > 0 && (
        <ListTable
          caption="Deliveries, newest first"
          columns={['Event', 'Status', 'Attempts', 'Last answer', 'Last attempt']}
          actions="Actions"
          rows={page.deliveries}
          rowKey={(d) => d.id}
          current={(d) => d.id === delivery}
          busy={deliveries.isFetching}
          pager={{ label: 'Pages of deliveries', offset: page.offset, total: page.total, previous: 'Newer', next: 'Older' }}
        >
          {(d) => (
            <>
              <td>
                <code>{d.event_type}</code>
              </td>
              <td>
                <span className={`badge ${d.status}`}>{d.status}</span>
              </td>
              <td>{d.attempts}</td>
              <td>{d.response_status ?? d.last_error ?? '—'}</td>
              <td>{when(d.last_attempt_at)}</td>
              <td className="row-actions">
                <Link
                  from="/apps/$appId/webhooks"
                  search={(prev) => ({ ...prev, delivery: d.id === delivery ? undefined : d.id })}
                  className="button small"
                  aria-label={`${d.id === delivery ? 'Hide attempts' : 'Attempts'} of the ${d.event_type} delivery`}
                >
                  {d.id === delivery ? 'Hide attempts' : 'Attempts'}
                </Link>
                <Button
                  className="button small"
                  aria-label={`Retry the ${d.event_type} delivery`}
                  isDisabled={retry.isPending || d.status === 'pending'}
                  onPress={() => retry.mutate({ id: endpoint.id, delivery_id: d.id })}
                >
                  Retry
                </Button>
              </td>
            </>
          )}
        </ListTable>
      )}
      {delivery && <Attempts endpointId={endpoint.id} deliveryId={delivery} />}
      <Recover endpointId={endpoint.id} onRecovered={refresh} />
    </section>
  );
}

function Attempts({ endpointId, deliveryId }: { endpointId: string; deliveryId: string }) {
  const trpc = app.useTRPC();
  const detail = useQuery(trpc.webhooks.deliveries.get.queryOptions({ id: endpointId, delivery_id: deliveryId }));
  return (
    <section aria-labelledby="attempts">
      <h3 id="attempts">Attempts{detail.data ? ` of ${detail.data.event_type}` : ''}</h3>
      <ErrorNotice error={detail.error} title="The delivery could not be read" />
      {detail.isPending && <p role="status">Loading the attempts…</p>}
      {detail.data && detail.data.attempt_log.length === 0 && <p>Not tried yet.</p>}
      {detail.data && detail.data.attempt_log.length > 0 && (
        <ListTable
          caption="Attempts, oldest first"
          columns={['Time', 'Answer', 'Duration', 'Response excerpt']}
          rows={detail.data.attempt_log}
          rowKey={(a) => a.attempted_at}
        >
          {(a) => (
            <>
              <td>{when(a.attempted_at)}</td>
              <td>{a.response_status ?? a.error ?? '—'}</td>
              <td>{a.duration_ms} ms</td>
              <td>
                {a.response_excerpt ? (
                  <ScrollRegion label="Response excerpt" className="excerpt">
                    <pre>
                      <code>{a.response_excerpt}</code>
                    </pre>
                  </ScrollRegion>
                ) : (
                  '—'
                )}
              </td>
            </>
          )}
        </ListTable>
      )}
    </section>
  );
}

function Recover({ endpointId, onRecovered }: { endpointId: string; onRecovered: () => void }) {
  const trpc = app.useTRPC();
  const [since, setSince] = useState('');
  const recover = useMutation(trpc.webhooks.recover.mutationOptions({ onSuccess: onRecovered }));
  return (
    <Form
      className="filters"
      aria-label="Recover failed deliveries"
      onSubmit={(event) => {
        event.preventDefault();
        recover.mutate({ id: endpointId, since: new Date(since).toISOString() });
      }}
    >
      <TextField className="field" isRequired value={since} onChange={setSince}>
        <Label>Send the failed deliveries again, since</Label>
        <Input type="datetime-local" />
      </TextField>
      <div className="actions">
        <Button type="submit" className="button" isDisabled={recover.isPending || !since}>
          Recover failed deliveries
        </Button>
      </div>
      <ErrorNotice error={recover.error} title="The deliveries were not recovered" />
      {recover.data && (
        <p role="status" className="notice success">
          {recover.data.recovered} failed {recover.data.recovered === 1 ? 'delivery' : 'deliveries'} queued again.
        </p>
      )}
    </Form>
  );
}
