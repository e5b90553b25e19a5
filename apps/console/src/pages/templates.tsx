import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams, useSearch } from '@tanstack/react-router';
import { useEffect, useState } from 'react';
import { Button, Checkbox, Form, Input, Label, Text, TextArea, TextField } from 'react-aria-components';
import { app, type Outputs } from '../api.ts';
import { ConfirmButton } from '../components/confirm.tsx';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { ScrollRegion } from '../components/scroll-region.tsx';
import { when } from '../format.ts';

type Entry = Outputs['templates']['catalog'][number];
type Template = Outputs['templates']['get'];

/** How long the editor waits after the last keystroke before it asks the server for a new preview. */
const PREVIEW_DELAY_MS = 400;

/**
 * The messages the application sends: the catalog, and one template (`?key=`) in an editor with the server's preview
 * (rendered by the server with the example values: the page never renders a template itself), a test send, and a
 * reset to the default.
 */
export function TemplatesPage() {
  const { appId } = useParams({ from: '/apps/$appId/templates' });
  const { key } = useSearch({ from: '/apps/$appId/templates' });
  const trpc = app.useTRPC();
  const catalog = useQuery(trpc.templates.catalog.queryOptions({ id: appId }));
  const entry = catalog.data?.find((t) => t.key === key);

  return (
    <section>
      <h1>Message templates</h1>
      <p>
        The mail Gatehouse sends for this application. Templates use Mustache: <code>{'{{variable}}'}</code> is escaped,{' '}
        <code>{'{{{variable}}}'}</code> is inserted as it is.
      </p>
      {catalog.isPending && <p role="status">Loading the templates…</p>}
      <ErrorNotice error={catalog.error} title="The templates could not be listed" />
      {catalog.data && (
        <ListTable
          caption="Message templates"
          columns={['Template', 'Sent when', 'Channel']}
          rows={catalog.data}
          rowKey={(t) => t.key}
          current={(t) => t.key === key}
          empty={
            <EmptyState
              title="No template"
              cli="npx gatehouse templates list"
              curl={curl('/v1/applications/$APP/templates/catalog')}
            />
          }
        >
          {(t) => (
            <>
              <td>
                <Link from="/apps/$appId/templates" search={{ key: t.key }} aria-label={`Edit ${t.label}`}>
                  {t.label}
                </Link>
                <div className="meta">
                  <code>{t.key}</code>
                </div>
              </td>
              <td>{t.description}</td>
              <td>{t.channel}</td>
            </>
          )}
        </ListTable>
      )}
      {entry && <TemplateEditor key={entry.key} appId={appId} entry={entry} />}
      {key && catalog.data && !entry && <p role="status">There is no template “{key}”.</p>}
    </section>
  );
}

function TemplateEditor({ appId, entry }: { appId: string; entry: Entry }) {
  const trpc = app.useTRPC();
  const template = useQuery(trpc.templates.get.queryOptions({ id: appId, key: entry.key }));
  return (
    <section className="panel" aria-labelledby="editor">
      <h2 id="editor">{entry.label}</h2>
      <p>{entry.description}</p>
      {template.isPending && <p role="status">Loading the template…</p>}
      <ErrorNotice error={template.error} title="The template could not be read" />
      {template.data && <Editor appId={appId} entry={entry} template={template.data} />}
    </section>
  );
}

function Editor({ appId, entry, template }: { appId: string; entry: Entry; template: Template }) {
  const trpc = app.useTRPC();
  const client = app.useTRPCClient();
  const queryClient = useQueryClient();
  const [subject, setSubject] = useState(template.subject ?? '');
  const [body, setBody] = useState(template.body);
  const [delivered, setDelivered] = useState(template.delivered);
  // What the preview shows: the draft as it was when typing paused.
  const [draft, setDraft] = useState({ subject, body });
  useEffect(() => {
    const timer = setTimeout(() => setDraft({ subject, body }), PREVIEW_DELAY_MS);
    return () => clearTimeout(timer);
  }, [subject, body]);
  // A saved or reset template is the truth: the editor shows what the server keeps.
  useEffect(() => {
    setSubject(template.subject ?? '');
    setBody(template.body);
    setDelivered(template.delivered);
  }, [template]);

  const preview = useQuery({
    queryKey: [...trpc.templates.preview.mutationKey(), appId, entry.key, draft.subject, draft.body],
    // The preview procedure stores nothing (a POST only because a template can be long): safe to ask as a query.
    queryFn: () =>
      client.templates.preview.mutate({
        id: appId,
        key: entry.key,
        body: draft.body,
        ...(entry.has_subject ? { subject: draft.subject } : {}),
      }),
    placeholderData: keepPreviousData,
    enabled: draft.body.trim() !== '',
  });
  const refresh = (saved?: Template) => {
    const key = trpc.templates.get.queryKey({ id: appId, key: entry.key });
    if (saved) queryClient.setQueryData(key, saved);
    else void queryClient.invalidateQueries({ queryKey: key });
  };
  const save = useMutation(trpc.templates.put.mutationOptions({ onSuccess: (saved) => refresh(saved) }));
  const reset = useMutation(trpc.templates.reset.mutationOptions({ onSuccess: () => refresh() }));

  return (
    <>
      <p className="meta">
        {template.customized ? `Customized, last saved ${when(template.updated_at)}.` : 'The default template.'}
      </p>
      <div className="template-editor">
        <Form
          aria-label={`Edit ${entry.label}`}
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate({
              id: appId,
              key: entry.key,
              body,
              delivered,
              ...(entry.has_subject ? { subject } : {}),
            });
          }}
        >
          {entry.has_subject && (
            <TextField className="field" isRequired value={subject} onChange={setSubject} maxLength={998}>
              <Label>Subject</Label>
              <Input />
            </TextField>
          )}
          <TextField className="field" isRequired value={body} onChange={setBody} maxLength={100_000}>
            <Label>Body (HTML)</Label>
            <TextArea rows={12} className="code-input" spellCheck={false} />
          </TextField>
          <Checkbox className="checkbox" isSelected={delivered} onChange={setDelivered}>
            Gatehouse sends it
          </Checkbox>
          <p className="muted">
            Unticked, Gatehouse sends nothing and emits a <code>message.created</code> event: you deliver it yourself.
          </p>
          <div className="actions">
            <Button type="submit" className="button primary" isDisabled={save.isPending}>
              {save.isPending ? 'Saving…' : 'Save the template'}
            </Button>
            {template.customized && (
              <ConfirmButton
                label="Reset to default"
                title={`Reset ${entry.label} to the default?`}
                confirmLabel="Reset the template"
                isDisabled={reset.isPending}
                onConfirm={() => reset.mutate({ id: appId, key: entry.key })}
              >
                <p>Your subject, body and delivery setting are deleted; the default is sent from now on.</p>
              </ConfirmButton>
            )}
          </div>
          <p role="status" className="status">
            {save.isSuccess ? 'Saved.' : reset.isSuccess ? 'Reset to the default.' : ''}
          </p>
          <ErrorNotice error={save.error} title="The template was not saved" />
          <ErrorNotice error={reset.error} title="The template was not reset" />
        </Form>
        <Preview preview={preview} />
      </div>
      <Variables entry={entry} />
      <TestSend appId={appId} entry={entry} changed={subject !== (template.subject ?? '') || body !== template.body} />
    </>
  );
}

function Preview({
  preview,
}: {
  preview: { data?: Outputs['templates']['preview']; error: unknown; isFetching: boolean; isPlaceholderData: boolean };
}) {
  return (
    <section aria-labelledby="preview" aria-busy={preview.isFetching} className="preview">
      <h3 id="preview">Preview</h3>
      <p className="meta">Rendered by the server with the example values below.</p>
      <ErrorNotice error={preview.error} title="The preview could not be rendered" />
      {preview.data && (
        <>
          {preview.data.subject !== null && (
            <p className="preview-subject">
              <span className="muted">Subject: </span>
              <span className="rendered">{preview.data.subject}</span>
            </p>
          )}
          <ScrollRegion label="The message as text" className="excerpt preview-text">
            <pre className="rendered">{preview.data.text}</pre>
          </ScrollRegion>
          <details>
            <summary>The HTML</summary>
            <ScrollRegion label="The message's HTML" className="excerpt">
              <pre>
                <code>{preview.data.html}</code>
              </pre>
            </ScrollRegion>
          </details>
        </>
      )}
    </section>
  );
}

function Variables({ entry }: { entry: Entry }) {
  return (
    <table className="table">
      <caption>Variables of {entry.label}</caption>
      <thead>
        <tr>
          <th scope="col">Variable</th>
          <th scope="col">What it is</th>
          <th scope="col">Example</th>
        </tr>
      </thead>
      <tbody>
        {entry.variables.map((v) => (
          <tr key={v.name}>
            <td>
              <code>{`{{${v.name}}}`}</code>
            </td>
            <td>{v.description}</td>
            <td>
              <code className="wrap">{v.example}</code>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Sends the saved template, with the example values, to one address. */
function TestSend({ appId, entry, changed }: { appId: string; entry: Entry; changed: boolean }) {
  const trpc = app.useTRPC();
  const [to, setTo] = useState('');
  const send = useMutation(trpc.templates.test.mutationOptions());
  return (
    <Form
      className="filters"
      aria-label="Send a test message"
      onSubmit={(event) => {
        event.preventDefault();
        send.mutate({ id: appId, key: entry.key, to });
      }}
    >
      <TextField className="field" type="email" isRequired value={to} onChange={setTo} maxLength={320}>
        <Label>Send a test to</Label>
        <Input placeholder="you@example.com" />
        <Text slot="description">
          {changed ? 'The saved template is sent: save your changes first.' : 'The saved template, with the example values.'}
        </Text>
      </TextField>
      <div className="actions">
        <Button type="submit" className="button" isDisabled={send.isPending}>
          {send.isPending ? 'Sending…' : 'Send a test'}
        </Button>
      </div>
      <ErrorNotice error={send.error} title="The test was not sent" />
      {send.data && (
        <p role="status" className="notice success">
          {send.data.status === 'queued'
            ? `Test sent to ${send.data.to}.`
            : `This template is not sent by Gatehouse: a message.created event for ${send.data.to} was emitted instead.`}
        </p>
      )}
    </Form>
  );
}
