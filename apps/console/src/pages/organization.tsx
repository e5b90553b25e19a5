import { useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearch } from '@tanstack/react-router';
import { Tab, TabList, TabPanel, Tabs } from 'react-aria-components';
import { app } from '../api.ts';
import { ErrorNotice } from '../components/error-notice.tsx';
import { ORGANIZATION_TABS, type OrganizationTab } from '../search.ts';
import { Directories } from './organization/directories.tsx';
import { Domains } from './organization/domains.tsx';
import { Invitations } from './organization/invitations.tsx';
import { Members } from './organization/members.tsx';
import { PortalLinks } from './organization/portal.tsx';
import { Subscription } from './organization/subscription.tsx';

/**
 * One organization: its details, then its members, invitations, subscription and seats, domains, SCIM directories
 * and admin portal links, each a tab; the tab is in the URL (`?tab=`), and so are a list's page and filter.
 */
export function OrganizationPage() {
  const { appId, orgId } = useParams({ from: '/apps/$appId/organizations/$orgId' });
  const { tab = 'members' } = useSearch({ from: '/apps/$appId/organizations/$orgId' });
  const navigate = useNavigate({ from: '/apps/$appId/organizations/$orgId' });
  const trpc = app.useTRPC();
  const organization = useQuery(trpc.organizations.get.queryOptions({ id: orgId }));

  return (
    <section>
      <p>
        <Link to="/apps/$appId/organizations" params={{ appId }}>
          ← All organizations
        </Link>
      </p>
      <h1>{organization.data?.name ?? 'Organization'}</h1>
      {organization.isPending && <p role="status">Loading the organization…</p>}
      <ErrorNotice error={organization.error} title="The organization could not be read" />
      {organization.data && (
        <>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <code>{organization.data.id}</code>
            </dd>
            <dt>Slug</dt>
            <dd>
              <code>{organization.data.slug}</code>
            </dd>
            <dt>Members</dt>
            <dd>{organization.data.member_count}</dd>
            <dt>Subscription</dt>
            <dd>
              {organization.data.subscription
                ? `${organization.data.subscription.plan_key}, ${organization.data.subscription.status}, ${organization.data.subscription.seats} seats`
                : 'none'}
            </dd>
          </dl>
          <Tabs
            selectedKey={tab}
            onSelectionChange={(key) => {
              const next = ORGANIZATION_TABS.find((t) => t === key) ?? 'members';
              // A list's page and filter belong to the tab they were set on.
              void navigate({ search: { tab: next === 'members' ? undefined : next }, replace: true });
            }}
          >
            <TabList aria-label="About this organization" className="tablist">
              <Tab id={'members' satisfies OrganizationTab}>Members</Tab>
              <Tab id={'invitations' satisfies OrganizationTab}>Invitations</Tab>
              <Tab id={'subscription' satisfies OrganizationTab}>Subscription and seats</Tab>
              <Tab id={'domains' satisfies OrganizationTab}>Domains</Tab>
              <Tab id={'directories' satisfies OrganizationTab}>Directories</Tab>
              <Tab id={'portal' satisfies OrganizationTab}>Admin portal</Tab>
            </TabList>
            <TabPanel id="members" className="tabpanel">
              <Members appId={appId} orgId={orgId} />
            </TabPanel>
            <TabPanel id="invitations" className="tabpanel">
              <Invitations orgId={orgId} />
            </TabPanel>
            <TabPanel id="subscription" className="tabpanel">
              <Subscription organization={organization.data} />
            </TabPanel>
            <TabPanel id="domains" className="tabpanel">
              <Domains orgId={orgId} />
            </TabPanel>
            <TabPanel id="directories" className="tabpanel">
              <Directories orgId={orgId} />
            </TabPanel>
            <TabPanel id="portal" className="tabpanel">
              <PortalLinks orgId={orgId} />
            </TabPanel>
          </Tabs>
        </>
      )}
    </section>
  );
}
