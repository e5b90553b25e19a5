import { QueryClientProvider } from '@tanstack/react-query';
import { Link, Outlet, useParams } from '@tanstack/react-router';
import { app, applicationClients } from '../api.ts';
import { useSession } from '../session.ts';

/**
 * An application's pages: its name, the operator's role there, and its sections. Its calls go through the
 * application's own tRPC client (`x-application-id`) and query cache. An application the operator has no role in
 * is "not found", as the server answers it.
 */
export function ApplicationLayout() {
  const { appId } = useParams({ from: '/apps/$appId' });
  const session = useSession();
  const application = session?.applications.find((a) => a.id === appId);
  if (!application) {
    return (
      <section>
        <h1>Application not found</h1>
        <p>
          There is no application with this id, or you have no role in it. <Link to="/apps">See your applications</Link>.
        </p>
      </section>
    );
  }
  const { client, queryClient } = applicationClients(appId);
  return (
    <QueryClientProvider client={queryClient}>
      <app.TRPCProvider trpcClient={client} queryClient={queryClient}>
        <div className="application">
          <div className="application-head">
            <p className="eyebrow">Application</p>
            <p className="application-name">
              {application.name} <span className={`badge ${application.environment}`}>{application.environment}</span>{' '}
              <span className="badge">your role: {application.role}</span>
            </p>
            <nav aria-label="Application" className="tabs-nav">
              <Link to="/apps/$appId/dashboard" params={{ appId }}>
                Dashboard
              </Link>
              <Link to="/apps/$appId/users" params={{ appId }}>
                Users
              </Link>
              <Link to="/apps/$appId/organizations" params={{ appId }}>
                Organizations
              </Link>
              <Link to="/apps/$appId/sign-in" params={{ appId }}>
                Sign-in
              </Link>
              <Link to="/apps/$appId/events" params={{ appId }}>
                Events
              </Link>
              <Link to="/apps/$appId/webhooks" params={{ appId }}>
                Webhooks
              </Link>
              <Link to="/apps/$appId/authz" params={{ appId }}>
                Authorization
              </Link>
              <Link to="/apps/$appId/api-keys" params={{ appId }}>
                API keys
              </Link>
              <Link to="/apps/$appId/domains" params={{ appId }}>
                Domains
              </Link>
              <Link to="/apps/$appId/templates" params={{ appId }}>
                Templates
              </Link>
              <Link to="/apps/$appId/access" params={{ appId }}>
                Host access
              </Link>
              <Link to="/apps/$appId/signing-keys" params={{ appId }}>
                Signing keys
              </Link>
              <Link to="/apps/$appId/settings" params={{ appId }}>
                Settings
              </Link>
            </nav>
          </div>
          <Outlet />
        </div>
      </app.TRPCProvider>
    </QueryClientProvider>
  );
}
