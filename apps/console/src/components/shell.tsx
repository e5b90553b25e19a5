import { Link, Outlet } from '@tanstack/react-router';
import { Button } from 'react-aria-components';
import { signOut, useSession } from '../session.ts';
import { StepUpDialog } from './step-up-dialog.tsx';

/** Every page's frame: a skip link, the header (who is signed in, sign out), the page, and the step-up dialog. */
export function Shell() {
  const session = useSession();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/apps" className="brand">
          Gatehouse console
        </Link>
        <nav aria-label="Console" className="console-nav">
          <Link to="/apps" search={{}} activeOptions={{ exact: true }}>
            Applications
          </Link>
          <Link to="/operators" search={{}}>
            Operators
          </Link>
        </nav>
        <div className="who">
          {session && (
            <span>
              {session.operator.email}
              {session.aal === 2 ? <span className="badge">second factor confirmed</span> : null}
            </span>
          )}
          <Button className="button small" onPress={() => void signOut()}>
            Sign out
          </Button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Outlet />
      </main>
      <StepUpDialog />
    </>
  );
}

export function NotFound() {
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no console page at this address. <Link to="/apps">Go to the applications</Link>.
      </p>
    </section>
  );
}
