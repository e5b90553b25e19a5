import { service } from './modules.ts';
import { router } from './trpc.ts';

/**
 * The router: every module's procedures under their namespaces (a namespace can gather procedures from several
 * layers: users.factors comes from the factors module above users), so no module imports one above it.
 */
export const appRouter = router(service.procedures);

export type AppRouter = typeof appRouter;
