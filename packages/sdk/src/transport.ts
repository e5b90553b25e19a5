import type { AppRouter } from '@gatehouse/api';
import { createTRPCUntypedClient, httpLink } from '@trpc/client';
import { GatehouseError } from './errors.ts';
import { PROCEDURES } from './procedures.ts';

export type ProcedurePath = keyof typeof PROCEDURES;

/**
 * The one way both clients reach the service: tRPC over `{baseUrl}/trpc`, the query or mutation the router
 * declares for the path, and failures as `GatehouseError`. `headers` sees the per-call access token, if any.
 */
export function createTransport(options: {
  baseUrl: string;
  fetch?: typeof fetch;
  headers: (accessToken: string | undefined) => Record<string, string>;
}) {
  const client = createTRPCUntypedClient<AppRouter>({
    links: [
      httpLink({
        url: `${options.baseUrl.replace(/\/+$/, '')}/trpc`,
        fetch: options.fetch,
        headers: ({ op }) => options.headers((op.context as { accessToken?: string }).accessToken),
      }),
    ],
  });
  return async <T>(path: ProcedurePath, input: unknown, accessToken?: string): Promise<T> => {
    const request = { context: accessToken ? { accessToken } : {} };
    try {
      return (await (PROCEDURES[path] === 'query'
        ? client.query(path, input, request)
        : client.mutation(path, input, request))) as T;
    } catch (error) {
      throw GatehouseError.from(error);
    }
  };
}
