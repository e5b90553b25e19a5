// Types only: the router's code stays on the server (scripts/size.ts checks the built files for it).
import type { AppRouter } from '@gatehouse/api';
import { QueryClient } from '@tanstack/react-query';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import { createTRPCContext } from '@trpc/tanstack-react-query';
import { accessToken, goToSignIn, refreshSession } from './session.ts';
import { stepUp } from './step-up.ts';

/**
 * Two typed faces of the one router, as the CLI has: the operator's procedures (applications, operators), which take
 * no application, and an application's procedures (everything a secret key can call), sent with `x-application-id`.
 * Each application gets its own tRPC client and its own query cache, so one application's answers can never be shown
 * under another's name (the query keys are the procedure and its input, not the header).
 */
export const app = createTRPCContext<AppRouter>();
/** What the procedures answer and take, by path (`Outputs['users']['get']`). */
export type Outputs = inferRouterOutputs<AppRouter>;
export type Inputs = inferRouterInputs<AppRouter>;
export const operator = createTRPCContext<AppRouter>();

/** The error code of a tRPC error answer, from a copy of the response (the original is left for tRPC to read). */
async function errorCode(response: Response): Promise<string | undefined> {
  try {
    const body = (await response.clone().json()) as unknown;
    const first = Array.isArray(body) ? body[0] : body;
    return (first as { error?: { data?: { code?: string } } } | undefined)?.error?.data?.code;
  } catch {
    return undefined;
  }
}

/**
 * `fetch` for the tRPC links: an expired token (401 `invalid_token`) is renewed once and the call sent again; a write
 * that needs the second factor (403 `step_up_required`) opens the step-up dialog (the call still fails, and its page
 * shows why).
 */
async function consoleFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  const response = await fetch(input, init);
  if (response.status === 401 && (await errorCode(response)) === 'invalid_token') {
    const session = await refreshSession();
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${session.access_token}`);
    const again = await fetch(input, { ...init, headers });
    if (again.status === 401 && (await errorCode(again)) === 'invalid_token') goToSignIn();
    return again;
  }
  if (response.status === 403 && (await errorCode(response)) === 'step_up_required') stepUp.require();
  return response;
}

function client(applicationId: string | null) {
  return createTRPCClient<AppRouter>({
    links: [
      // One HTTP request per call (not batched): each answer carries its own x-request-id, which an error shows.
      httpLink({
        url: '/trpc',
        fetch: consoleFetch,
        headers: () => {
          const headers: Record<string, string> = {};
          const token = accessToken();
          if (token) headers.authorization = `Bearer ${token}`;
          if (applicationId) headers['x-application-id'] = applicationId;
          return headers;
        },
      }),
    ],
  });
}

function newQueryClient(): QueryClient {
  return new QueryClient({
    defaultOptions: {
      queries: {
        staleTime: 15_000,
        refetchOnWindowFocus: false,
        // A 4xx is the answer, not a glitch: asking again would only repeat it.
        retry: (failures, error) => {
          const status = statusOf(error);
          return failures < 1 && (status === null || status >= 500);
        },
      },
    },
  });
}

export const operatorClient = client(null);
export const operatorQueryClient = newQueryClient();

const perApplication = new Map<string, { client: ReturnType<typeof client>; queryClient: QueryClient }>();

/** The tRPC client and query cache of one application (made once, kept while the page lives). */
export function applicationClients(applicationId: string) {
  let entry = perApplication.get(applicationId);
  if (!entry) {
    entry = { client: client(applicationId), queryClient: newQueryClient() };
    perApplication.set(applicationId, entry);
  }
  return entry;
}

/** Forgets an application's cache (after it is deleted). */
export function forgetApplication(applicationId: string): void {
  perApplication.get(applicationId)?.queryClient.clear();
  perApplication.delete(applicationId);
}

export interface ErrorInfo {
  message: string;
  code: string | null;
  status: number | null;
  requestId: string | null;
}

function statusOf(error: unknown): number | null {
  if (error instanceof TRPCClientError) {
    const data = error.data as { httpStatus?: number } | undefined;
    return data?.httpStatus ?? (error.meta?.response as Response | undefined)?.status ?? null;
  }
  return null;
}

/** What an error shows: the server's message and code, the HTTP status, and the request id to quote. */
export function describeError(error: unknown): ErrorInfo {
  if (error instanceof TRPCClientError) {
    const data = error.data as { code?: string; httpStatus?: number } | undefined;
    const response = error.meta?.response as Response | undefined;
    return {
      message: error.message,
      code: data?.code ?? null,
      status: statusOf(error),
      requestId: response?.headers.get('x-request-id') ?? null,
    };
  }
  if (error && typeof error === 'object' && 'requestId' in error && error instanceof Error) {
    const e = error as Error & { requestId: string | null; code?: string | null; status?: number };
    return { message: e.message, code: e.code ?? null, status: e.status ?? null, requestId: e.requestId };
  }
  return {
    message: error instanceof Error ? error.message : 'Something went wrong.',
    code: null,
    status: null,
    requestId: null,
  };
}
