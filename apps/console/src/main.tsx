import { QueryClientProvider } from '@tanstack/react-query';
import { RouterProvider } from '@tanstack/react-router';
import { StrictMode, useEffect, useState } from 'react';
import { Button } from 'react-aria-components';
import { createRoot } from 'react-dom/client';
import { operator, operatorClient, operatorQueryClient } from './api.ts';
import { ErrorNotice } from './components/error-notice.tsx';
import { router } from './router.tsx';
import { refreshSession, useSession } from './session.ts';

/** Opens the session (the server's handshake) before any page renders; a 401 has already left for the sign-in. */
function Console() {
  const session = useSession();
  const [error, setError] = useState<unknown>(null);
  const [attempt, setAttempt] = useState(0);
  // biome-ignore lint/correctness/useExhaustiveDependencies: `attempt` is the retry button's trigger.
  useEffect(() => {
    setError(null);
    refreshSession().catch(setError);
  }, [attempt]);

  if (error) {
    return (
      <main id="main" className="standalone">
        <h1>Gatehouse console</h1>
        <ErrorNotice error={error} title="The console could not open your session" />
        <Button className="button" onPress={() => setAttempt((n) => n + 1)}>
          Try again
        </Button>
      </main>
    );
  }
  if (!session) {
    return (
      <main id="main" className="standalone" aria-busy="true">
        <h1>Gatehouse console</h1>
        <p role="status">Opening your session…</p>
      </main>
    );
  }
  return (
    <QueryClientProvider client={operatorQueryClient}>
      <operator.TRPCProvider trpcClient={operatorClient} queryClient={operatorQueryClient}>
        <RouterProvider router={router} />
      </operator.TRPCProvider>
    </QueryClientProvider>
  );
}

const root = document.getElementById('root');
if (root) {
  createRoot(root).render(
    <StrictMode>
      <Console />
    </StrictMode>,
  );
}
