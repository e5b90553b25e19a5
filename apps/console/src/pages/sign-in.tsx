import { Link, Outlet, useParams } from '@tanstack/react-router';

/**
 * The "Sign-in" section of an application: how people sign in besides the hosted page's own methods. Its pages share
 * one sub-navigation: SSO connections (SAML), social providers, and the clients of the application's OpenID provider.
 */
export function SignInLayout() {
  const { appId } = useParams({ from: '/apps/$appId/sign-in' });
  return (
    <>
      <nav aria-label="Sign-in" className="tabs-nav subnav">
        <Link to="/apps/$appId/sign-in/sso" params={{ appId }}>
          SSO connections
        </Link>
        <Link to="/apps/$appId/sign-in/social" params={{ appId }}>
          Social providers
        </Link>
        <Link to="/apps/$appId/sign-in/oauth-clients" params={{ appId }}>
          OAuth clients
        </Link>
      </nav>
      <Outlet />
    </>
  );
}
