import { createOrm, type DatabaseConfig, migrate, type Orm, pendingMigrations, SecretBox, sha256 } from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import { buildServer } from './http.ts';

export { readEnv } from './env.ts';
export { loadSecrets, masterKeyPath, operatorTokenPath } from './secrets.ts';

export interface GatehouseServerOptions {
  database: DatabaseConfig;
  operatorToken: string;
  masterKey: Buffer;
  /** Public base URL (issuer and links). Never derived from request headers. */
  baseUrl: string;
  logLevel?: string | false;
}

export interface GatehouseServer {
  app: FastifyInstance;
  orm: Orm;
  /** Stops accepting connections, lets in-flight requests finish, then closes the database. */
  close: () => Promise<void>;
}

/** Connects the database, applies pending migrations and builds the HTTP server (not yet listening). */
export async function createGatehouseServer(options: GatehouseServerOptions): Promise<GatehouseServer> {
  const orm = await createOrm(options.database);
  await migrate(orm);
  const app = await buildServer({
    services: {
      orm,
      secretBox: new SecretBox(options.masterKey),
      operatorTokenHash: sha256(options.operatorToken),
      baseUrl: options.baseUrl.replace(/\/+$/, ''),
    },
    logLevel: options.logLevel ?? 'info',
    ready: async () => (await pendingMigrations(orm)) === 0,
  });
  return {
    app,
    orm,
    close: async () => {
      await app.close();
      await orm.close();
    },
  };
}
