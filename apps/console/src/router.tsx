import { createRootRoute, createRoute, createRouter, lazyRouteComponent, Outlet, redirect } from '@tanstack/react-router';
import { ApplicationLayout } from './components/application-layout.tsx';
import { NotFound, Shell } from './components/shell.tsx';
import {
  AUTHZ_QUESTIONS,
  type AuthzSearch,
  type DashboardRange,
  dashboardRange,
  type EventsSearch,
  flag,
  INVITATION_STATUSES,
  isoTime,
  type OAuthClientsSearch,
  type OperatorsSearch,
  ORGANIZATION_TABS,
  type OrganizationSearch,
  offset,
  oneOf,
  SOCIAL_PROVIDERS,
  type SocialProvider,
  SSO_SOURCES,
  type SsoSource,
  templateKey,
  text,
  USER_TABS,
  type UserTab,
  uuid,
  type WebhooksSearch,
} from './search.ts';

/**
 * The console's pages, code-based routes under /console. Each page is its own chunk, loaded when it is first opened
 * (or hovered: preload on intent); the shell, the session and the tRPC client are the initial chunk.
 */
const rootRoute = createRootRoute({ component: Shell, notFoundComponent: NotFound });

const indexRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: '/',
  beforeLoad: () => {
    throw redirect({ to: '/apps' });
  },
});

const applicationsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'apps',
  validateSearch: (search: Record<string, unknown>): { q?: string } => ({ q: text(search.q) }),
  component: lazyRouteComponent(() => import('./pages/applications.tsx'), 'ApplicationsPage'),
});

const operatorsRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'operators',
  validateSearch: (search: Record<string, unknown>): OperatorsSearch => ({ offset: offset(search.offset) }),
  component: lazyRouteComponent(() => import('./pages/operators.tsx'), 'OperatorsPage'),
});

const applicationRoute = createRoute({
  getParentRoute: () => rootRoute,
  path: 'apps/$appId',
  component: ApplicationLayout,
});

const applicationIndexRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: '/',
  beforeLoad: ({ params }) => {
    throw redirect({ to: '/apps/$appId/dashboard', params });
  },
});

const dashboardRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'dashboard',
  validateSearch: (search: Record<string, unknown>): { days?: DashboardRange } => ({ days: dashboardRange(search.days) }),
  component: lazyRouteComponent(() => import('./pages/dashboard.tsx'), 'DashboardPage'),
});

const eventsRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'events',
  validateSearch: (search: Record<string, unknown>): EventsSearch => ({
    action: text(search.action),
    actor: text(search.actor),
    since: isoTime(search.since),
    until: isoTime(search.until),
    offset: offset(search.offset),
    live: flag(search.live),
  }),
  component: lazyRouteComponent(() => import('./pages/events.tsx'), 'EventsPage'),
});

const webhooksRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'webhooks',
  validateSearch: (search: Record<string, unknown>): WebhooksSearch => {
    const endpoint = uuid(search.endpoint);
    // A delivery and a page belong to an endpoint: without one they mean nothing.
    return endpoint
      ? { endpoint, delivery: uuid(search.delivery), offset: offset(search.offset) }
      : { endpoint: undefined, delivery: undefined, offset: undefined };
  },
  component: lazyRouteComponent(() => import('./pages/webhooks.tsx'), 'WebhooksPage'),
});

const authzRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'authz',
  validateSearch: (search: Record<string, unknown>): AuthzSearch => {
    const ask = oneOf(AUTHZ_QUESTIONS)(search.ask);
    return {
      namespace: text(search.namespace),
      object: text(search.object),
      relation: text(search.relation),
      subject: text(search.subject),
      offset: offset(search.offset),
      // The explorer's fields mean something only with its question.
      ask,
      ask_object: ask ? text(search.ask_object) : undefined,
      ask_relation: ask ? text(search.ask_relation) : undefined,
      ask_subject: ask === 'check' ? text(search.ask_subject) : undefined,
    };
  },
  component: lazyRouteComponent(() => import('./pages/authz.tsx'), 'AuthzPage'),
});

const settingsRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'settings',
  component: lazyRouteComponent(() => import('./pages/settings.tsx'), 'SettingsPage'),
});

const apiKeysRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'api-keys',
  component: lazyRouteComponent(() => import('./pages/api-keys.tsx'), 'ApiKeysPage'),
});

const domainsRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'domains',
  validateSearch: (search: Record<string, unknown>): { domain?: string } => ({ domain: uuid(search.domain) }),
  component: lazyRouteComponent(() => import('./pages/domains.tsx'), 'DomainsPage'),
});

const templatesRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'templates',
  validateSearch: (search: Record<string, unknown>): { key?: string } => ({ key: templateKey(search.key) }),
  component: lazyRouteComponent(() => import('./pages/templates.tsx'), 'TemplatesPage'),
});

const accessRulesRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'access',
  component: lazyRouteComponent(() => import('./pages/access-rules.tsx'), 'AccessRulesPage'),
});

const signingKeysRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'signing-keys',
  component: lazyRouteComponent(() => import('./pages/signing-keys.tsx'), 'SigningKeysPage'),
});

const usersRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'users',
  component: Outlet,
});

const usersIndexRoute = createRoute({
  getParentRoute: () => usersRoute,
  path: '/',
  validateSearch: (search: Record<string, unknown>): { q?: string; offset?: number } => ({
    q: text(search.q),
    offset: offset(search.offset),
  }),
  component: lazyRouteComponent(() => import('./pages/users.tsx'), 'UsersPage'),
});

const userRoute = createRoute({
  getParentRoute: () => usersRoute,
  path: '$userId',
  validateSearch: (search: Record<string, unknown>): { tab?: UserTab } => ({
    tab: oneOf(USER_TABS)(search.tab),
  }),
  component: lazyRouteComponent(() => import('./pages/user.tsx'), 'UserPage'),
});

const organizationsRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'organizations',
  component: Outlet,
});

const organizationsIndexRoute = createRoute({
  getParentRoute: () => organizationsRoute,
  path: '/',
  validateSearch: (search: Record<string, unknown>): { q?: string; offset?: number } => ({
    q: text(search.q),
    offset: offset(search.offset),
  }),
  component: lazyRouteComponent(() => import('./pages/organizations.tsx'), 'OrganizationsPage'),
});

const organizationRoute = createRoute({
  getParentRoute: () => organizationsRoute,
  path: '$orgId',
  validateSearch: (search: Record<string, unknown>): OrganizationSearch => {
    const tab = oneOf(ORGANIZATION_TABS)(search.tab);
    // A page belongs to the members' or the invitations' list, a status to the invitations: elsewhere they mean nothing.
    return {
      tab,
      offset: tab === undefined || tab === 'members' || tab === 'invitations' ? offset(search.offset) : undefined,
      status: tab === 'invitations' ? oneOf(INVITATION_STATUSES)(search.status) : undefined,
    };
  },
  component: lazyRouteComponent(() => import('./pages/organization.tsx'), 'OrganizationPage'),
});

/**
 * Sign-in connections, one section with its own sub-navigation: SSO (SAML) connections, social providers, and the
 * application's own OpenID provider's clients.
 */
const signInRoute = createRoute({
  getParentRoute: () => applicationRoute,
  path: 'sign-in',
  component: lazyRouteComponent(() => import('./pages/sign-in.tsx'), 'SignInLayout'),
});

const signInIndexRoute = createRoute({
  getParentRoute: () => signInRoute,
  path: '/',
  beforeLoad: ({ params }) => {
    throw redirect({ to: '/apps/$appId/sign-in/sso', params });
  },
});

const ssoRoute = createRoute({
  getParentRoute: () => signInRoute,
  path: 'sso',
  component: Outlet,
});

const ssoIndexRoute = createRoute({
  getParentRoute: () => ssoRoute,
  path: '/',
  validateSearch: (search: Record<string, unknown>): { source?: SsoSource } => ({
    source: oneOf(SSO_SOURCES)(search.source),
  }),
  component: lazyRouteComponent(() => import('./pages/sso-connections.tsx'), 'SsoConnectionsPage'),
});

const ssoConnectionRoute = createRoute({
  getParentRoute: () => ssoRoute,
  path: '$connectionId',
  validateSearch: (search: Record<string, unknown>): { edit?: true } => ({ edit: flag(search.edit) }),
  component: lazyRouteComponent(() => import('./pages/sso-connection.tsx'), 'SsoConnectionPage'),
});

const socialProvidersRoute = createRoute({
  getParentRoute: () => signInRoute,
  path: 'social',
  validateSearch: (search: Record<string, unknown>): { provider?: SocialProvider } => ({
    provider: oneOf(SOCIAL_PROVIDERS)(search.provider),
  }),
  component: lazyRouteComponent(() => import('./pages/social-providers.tsx'), 'SocialProvidersPage'),
});

const oauthClientsRoute = createRoute({
  getParentRoute: () => signInRoute,
  path: 'oauth-clients',
  validateSearch: (search: Record<string, unknown>): OAuthClientsSearch => ({ client: uuid(search.client) }),
  component: lazyRouteComponent(() => import('./pages/oauth-clients.tsx'), 'OAuthClientsPage'),
});

const routeTree = rootRoute.addChildren([
  indexRoute,
  applicationsRoute,
  operatorsRoute,
  applicationRoute.addChildren([
    applicationIndexRoute,
    dashboardRoute,
    eventsRoute,
    webhooksRoute,
    authzRoute,
    settingsRoute,
    apiKeysRoute,
    domainsRoute,
    templatesRoute,
    accessRulesRoute,
    signingKeysRoute,
    usersRoute.addChildren([usersIndexRoute, userRoute]),
    organizationsRoute.addChildren([organizationsIndexRoute, organizationRoute]),
    signInRoute.addChildren([
      signInIndexRoute,
      ssoRoute.addChildren([ssoIndexRoute, ssoConnectionRoute]),
      socialProvidersRoute,
      oauthClientsRoute,
    ]),
  ]),
]);

export const router = createRouter({
  routeTree,
  basepath: '/console',
  defaultPreload: 'intent',
  scrollRestoration: true,
});

declare module '@tanstack/react-router' {
  interface Register {
    router: typeof router;
  }
}
