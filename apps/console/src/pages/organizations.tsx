import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { useState } from 'react';
import { Button, Form, Input, Label, SearchField, Text, TextField } from 'react-aria-components';
import { app } from '../api.ts';
import { curl, EmptyState } from '../components/empty-state.tsx';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ListTable } from '../components/list-table.tsx';
import { PAGE_SIZE } from '../search.ts';

/** The application's organizations, newest first: a search by name or slug and server paging in the URL; create one. */
export function OrganizationsPage() {
  const { appId } = useParams({ from: '/apps/$appId/organizations/' });
  const { q, offset = 0 } = useSearch({ from: '/apps/$appId/organizations/' });
  const navigate = useNavigate({ from: '/apps/$appId/organizations/' });
  const trpc = app.useTRPC();
  const organizations = useQuery({
    ...trpc.organizations.list.queryOptions({ search: q, limit: PAGE_SIZE, offset }),
    placeholderData: keepPreviousData,
  });
  const page = organizations.data;

  return (
    <section>
      <h1>Organizations</h1>
      <SearchField
        className="field search"
        defaultValue={q ?? ''}
        onChange={(value) => void navigate({ search: { q: value || undefined, offset: undefined }, replace: true })}
      >
        <Label>Search by name or slug</Label>
        <Input />
      </SearchField>
      <ErrorNotice error={organizations.error} title="The organizations could not be listed" />
      {organizations.isPending && <p role="status">Loading the organizations…</p>}
      {page && page.total === 0 && !q && (
        <EmptyState
          title="No organization yet"
          cli={'npx gatehouse orgs create "Acme Inc."'}
          curl={curl('/v1/organizations', { method: 'POST', body: '{"name": "Acme Inc."}' })}
        />
      )}
      {page && page.total === 0 && q && <p role="status">No organization matches “{q}”.</p>}
      {page && page.organizations.length > 0 && (
        <ListTable
          caption="Organizations"
          columns={['Name', 'Slug', 'Members', 'Created']}
          rows={page.organizations}
          rowKey={(org) => org.id}
          busy={organizations.isFetching}
          pager={{ label: 'Pages of organizations', offset: page.offset, total: page.total }}
        >
          {(org) => (
            <>
              <td>
                <Link to="/apps/$appId/organizations/$orgId" params={{ appId, orgId: org.id }}>
                  {org.name}
                </Link>
              </td>
              <td>
                <code>{org.slug}</code>
              </td>
              <td>{org.member_count}</td>
              <td>{new Date(org.created_at).toLocaleString()}</td>
            </>
          )}
        </ListTable>
      )}
      <CreateOrganization appId={appId} />
    </section>
  );
}

function CreateOrganization({ appId }: { appId: string }) {
  const trpc = app.useTRPC();
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [slug, setSlug] = useState('');
  const create = useMutation(
    trpc.organizations.create.mutationOptions({
      onSuccess: (org) => navigate({ to: '/apps/$appId/organizations/$orgId', params: { appId, orgId: org.id } }),
    }),
  );
  return (
    <section className="panel" aria-labelledby="create-organization">
      <h2 id="create-organization">Create an organization</h2>
      <Form
        onSubmit={(event) => {
          event.preventDefault();
          create.mutate({ name, ...(slug ? { slug } : {}) });
        }}
      >
        <TextField className="field" isRequired value={name} onChange={setName} maxLength={200}>
          <Label>Name</Label>
          <Input />
        </TextField>
        <TextField className="field" value={slug} onChange={setSlug} maxLength={100}>
          <Label>Slug (optional)</Label>
          <Input placeholder="acme-inc" />
          <Text slot="description">Lower-case letters, digits and hyphens; made from the name when left empty.</Text>
        </TextField>
        <Button type="submit" className="button primary" isDisabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create the organization'}
        </Button>
      </Form>
      <ErrorNotice error={create.error} title="The organization was not created" />
    </section>
  );
}
