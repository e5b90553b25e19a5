import { readFile } from 'node:fs/promises';
import { createGatehouse, type GatehouseClient } from '@gatehouse/sdk';
import type { Command } from 'commander';
import { readConfig, type StoredConfig } from './config.ts';
import { UsageError } from './errors.ts';
import { loadServerCode } from './server-code.ts';

/** The options every command accepts (declared once, on the program). Commander fills them from flags, then env. */
export interface GlobalOptions {
  json?: boolean;
  baseUrl?: string;
  applicationId?: string;
  secretKey?: string;
}

export const DEFAULT_BASE_URL = 'http://localhost:4000';

export const globalOptions = (command: Command): GlobalOptions => command.optsWithGlobals<GlobalOptions>();

export interface Credentials {
  baseUrl: string;
  applicationId: string | undefined;
  secretKey: string | undefined;
}

const first = (...values: Array<string | undefined>): string | undefined => values.find((v) => v !== undefined && v !== '');

export function normalizeBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError(`invalid base URL ${JSON.stringify(value)}: expected something like ${DEFAULT_BASE_URL}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UsageError(`invalid base URL ${JSON.stringify(value)}: it must start with http:// or https://`);
  }
  return value.replace(/\/+$/, '');
}

/** Flags, then environment (both already merged by commander), then the config file, then the default URL. */
export function resolveCredentials(options: GlobalOptions, config: StoredConfig): Credentials {
  return {
    baseUrl: normalizeBaseUrl(first(options.baseUrl, config.base_url) ?? DEFAULT_BASE_URL),
    applicationId: first(options.applicationId, config.application_id),
    secretKey: first(options.secretKey, config.secret_key),
  };
}

/** A fetch whose failures name the server it could not reach, instead of a bare "fetch failed". */
function reportingFetch(baseUrl: string): typeof fetch {
  return async (input, init) => {
    try {
      return await fetch(input, init);
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const reason = cause?.code ?? cause?.message ?? (error as Error).message;
      throw new Error(`could not reach ${baseUrl} (${reason}); is the server running?`);
    }
  };
}

export function connect(credentials: Credentials): GatehouseClient {
  if (!credentials.applicationId || !credentials.secretKey) {
    throw new UsageError(
      'not logged in: run `gatehouse login --application-id <id> --secret-key <key>`, ' +
        'or set GATEHOUSE_APPLICATION_ID and GATEHOUSE_SECRET_KEY',
    );
  }
  return createGatehouse({
    baseUrl: credentials.baseUrl,
    applicationId: credentials.applicationId,
    secretKey: credentials.secretKey,
    fetch: reportingFetch(credentials.baseUrl),
  });
}

/** The SDK bound to one application with a secret key: credentials from flags > env > config file. */
export async function secretKeyClient(command: Command): Promise<GatehouseClient> {
  return connect(resolveCredentials(globalOptions(command), await readConfig()));
}

/**
 * The SDK and the application it acts on (the logged-in one), for the commands that address
 * `/v1/applications/{id}/…` (signing keys, templates).
 */
export async function applicationClient(command: Command): Promise<{ gatehouse: GatehouseClient; applicationId: string }> {
  const credentials = resolveCredentials(globalOptions(command), await readConfig());
  const gatehouse = connect(credentials);
  return { gatehouse, applicationId: credentials.applicationId! };
}

/**
 * The operator token: `GATEHOUSE_OPERATOR_TOKEN`, else the file the server generated in its data directory
 * (`GATEHOUSE_DATA_DIR`, default `./.gatehouse`), so an operator on the server's machine needs no copy of it.
 */
export async function operatorToken(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.GATEHOUSE_OPERATOR_TOKEN) return env.GATEHOUSE_OPERATOR_TOKEN;
  // Loaded on demand, from the light entry of the server package (no HTTP stack, no ORM).
  const { dataDirOf, operatorTokenPath } = await loadServerCode(
    () => import('@gatehouse/server/config'),
    "set GATEHOUSE_OPERATOR_TOKEN (the server keeps it in <GATEHOUSE_DATA_DIR>/operator-token; it cannot be read from the server's data directory here)",
  );
  const path = operatorTokenPath(
    dataDirOf({ GATEHOUSE_DATA_DIR: env.GATEHOUSE_DATA_DIR || './.gatehouse', INIT_CWD: env.INIT_CWD }),
  );
  try {
    const token = (await readFile(path, 'utf8')).trim();
    if (token) return token;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  throw new UsageError(
    `no operator token: set GATEHOUSE_OPERATOR_TOKEN, or run where the server keeps its data (GATEHOUSE_DATA_DIR); ${path} does not exist`,
  );
}

/** The SDK with the operator token, for managing applications. */
export async function operatorClient(command: Command): Promise<GatehouseClient> {
  const options = globalOptions(command);
  const config = await readConfig();
  const baseUrl = normalizeBaseUrl(first(options.baseUrl, config.base_url) ?? DEFAULT_BASE_URL);
  return createGatehouse({ baseUrl, operatorToken: await operatorToken(), fetch: reportingFetch(baseUrl) });
}
