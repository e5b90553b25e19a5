import { callTRPCProcedure } from '@trpc/server';
import type { Context } from './context.ts';
import { appRouter } from './router.ts';
import type { Meta } from './trpc.ts';

/** The kind of each procedure, by its dotted path (`users.get`): what a transport needs to route a call. */
export const procedureTypes: ReadonlyMap<string, string> = new Map(
  Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: { type: string } }>).map(([path, p]) => [
    path,
    p._def.type,
  ]),
);

/**
 * Calls a procedure as tRPC's own server-side caller does (its middlewares, input and output schemas): the one way the
 * REST routes and the fast path of `/trpc` run a procedure, so the transports cannot differ in what they check.
 */
export const callProcedure = (ctx: Context, path: string, type: string, input: unknown): Promise<unknown> =>
  callTRPCProcedure({
    router: appRouter,
    path,
    ctx,
    type: type as 'query' | 'mutation',
    getRawInput: async () => input,
    signal: undefined,
    batchIndex: 0,
  });

/** A REST operation: one procedure with OpenAPI meta, as an HTTP host routes it. */
export interface RestRoute {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  /** The OpenAPI path (`/v1/users/{id}`): also the route's name in metrics. */
  path: string;
  /** Its path parameters (`id`): they come from the path only, never from the body or query. */
  parameters: string[];
  /** Whether the input comes from a JSON body (POST, PATCH, PUT) or from the query (GET, DELETE). */
  body: boolean;
  /** Runs the procedure (its middlewares, input and output schemas) on `input`: path parameters over body or query. */
  call(ctx: Context, input: Record<string, unknown>): Promise<unknown>;
}

interface Procedure {
  _def: { type: string; meta?: Meta };
}

/** Every REST operation of the router, from the procedures' OpenAPI meta. */
export function restRoutes(): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const [name, procedure] of Object.entries(appRouter._def.procedures as unknown as Record<string, Procedure>)) {
    const openapi = procedure._def.meta?.openapi;
    if (!openapi) continue;
    const method = openapi.method as RestRoute['method'];
    routes.push({
      method,
      path: openapi.path,
      parameters: [...openapi.path.matchAll(/\{(\w+)\}/g)].flatMap(([, name]) => name ?? []),
      body: method !== 'GET' && method !== 'DELETE',
      call: (ctx, raw) => callProcedure(ctx, name, procedure._def.type, raw),
    });
  }
  return routes;
}
