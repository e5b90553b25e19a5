export type { Context, RequestInfo, Services } from './context.ts';
export { createContext, createServices, type ServicesOptions } from './context.ts';
export { createOrm, type DatabaseConfig, migrate, type Orm, openPglite, pendingMigrations } from './db/orm.ts';
export { AppError, ERROR_CODES, type ErrorBody, type ErrorCode } from './errors.ts';
export { SecretBox, sha256 } from './lib/crypto.ts';
export { CORS_ALLOWED_HEADERS, preflightAllowed } from './modules/applications/cors.ts';
export { buildOpenApiDocument } from './openapi.ts';
export { type AppRouter, appRouter } from './router.ts';
export { errorBody, type Meta } from './trpc.ts';
