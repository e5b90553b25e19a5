import { BUILT_IN_PROVIDERS, type OAuthConfig } from '@gatehouse/api';
import { z } from 'zod';
import { StartupError } from './startup-error.ts';

/** `GATEHOUSE_SHARED_OAUTH_<PROVIDER>_CLIENT_ID` / `_SECRET` of every built-in provider (both or neither). */
const sharedOAuthVariables = Object.fromEntries(
  BUILT_IN_PROVIDERS.flatMap((provider) => [
    [`GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_ID`, z.string().min(1).max(512).optional()],
    [`GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_SECRET`, z.string().min(1).max(8192).optional()],
  ]),
) as Record<string, z.ZodOptional<z.ZodString>>;

/** The process environment, read and validated once (CONTRACT §7). */
const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65_535).default(4000),
  /**
   * The address the server binds. Default `0.0.0.0`, every IPv4 interface: a container's published port and a
   * reverse proxy on another host reach it; `127.0.0.1` keeps it to this machine, `::` every IPv6 and IPv4 interface.
   */
  HOST: z.string().default('0.0.0.0'),
  GATEHOUSE_BASE_URL: z.url().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'DATABASE_URL must be a postgres:// URL')
    .optional(),
  /**
   * `transaction`: DATABASE_URL is a pooler in transaction mode (PgBouncer, RDS Proxy, a platform's pooler): no named
   * prepared statement and no session state. `direct` (default): DATABASE_URL reaches PostgreSQL itself, or a pooler
   * in session mode.
   */
  GATEHOUSE_DATABASE_POOLER: z.enum(['direct', 'transaction']).default('direct'),
  /** Connections of the API's pool to PostgreSQL per process (the rate limiter has 4 more of its own). */
  GATEHOUSE_DATABASE_POOL_SIZE: z.coerce.number().int().min(2).max(500).optional(),
  GATEHOUSE_DATA_DIR: z.string().default('./.gatehouse'),
  GATEHOUSE_OPERATOR_TOKEN: z.string().min(24, 'GATEHOUSE_OPERATOR_TOKEN must be at least 24 characters').optional(),
  GATEHOUSE_MASTER_KEY: z
    .string()
    .refine((v) => Buffer.from(v, 'base64').length === 32, 'GATEHOUSE_MASTER_KEY must be 32 bytes, base64-encoded')
    .optional(),
  GATEHOUSE_SMTP_URL: z
    .string()
    .regex(/^smtps?:\/\//, 'GATEHOUSE_SMTP_URL must be an smtp:// or smtps:// URL')
    .optional(),
  GATEHOUSE_MAIL_FROM: z.string().min(3).optional(),
  GATEHOUSE_REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'GATEHOUSE_REDIS_URL must be a redis:// URL')
    .optional(),
  /** Seconds between mail attempts after each failure, comma-separated; after the last the message is `failed`. */
  GATEHOUSE_MAIL_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(\.\d+)?(,\d+(\.\d+)?)*$/, 'GATEHOUSE_MAIL_RETRY_SCHEDULE must be seconds separated by commas, e.g. 10,60,300')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  /** `1`: webhook URLs may also be `http` and loopback (local development and tests), nothing else. */
  GATEHOUSE_ALLOW_INSECURE_WEBHOOKS: z.enum(['0', '1', 'true', 'false']).optional(),
  /** Seconds before each webhook retry, comma-separated (default 5,300,1800,7200,18000,36000,36000). */
  GATEHOUSE_WEBHOOK_RETRY_SCHEDULE: z
    .string()
    .regex(/^\d+(\.\d+)?(,\d+(\.\d+)?)*$/, 'GATEHOUSE_WEBHOOK_RETRY_SCHEDULE must be seconds separated by commas, e.g. 5,300')
    .transform((v) => v.split(',').map(Number))
    .optional(),
  /** Milliseconds one webhook attempt may take (default 15000). */
  GATEHOUSE_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).optional(),
  /** The host name custom domains point their CNAME at (the operator's proxy); unset: the base URL's host name. */
  GATEHOUSE_CNAME_TARGET: z
    .string()
    .regex(
      /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/i,
      'GATEHOUSE_CNAME_TARGET must be a host name, e.g. domains.example.com',
    )
    .transform((v) => v.toLowerCase())
    .optional(),
  /** DNS resolvers for outbound checks (webhooks) and domain verification, comma-separated `ip` or `ip:port`; unset: the system's. */
  GATEHOUSE_DNS_SERVERS: z
    .string()
    .regex(/^[0-9a-fA-F.:[\]]+(,[0-9a-fA-F.:[\]]+)*$/, 'GATEHOUSE_DNS_SERVERS must be IP addresses separated by commas')
    .transform((v) => v.split(','))
    .optional(),
  /** Bearer token that `GET /metrics` requires; unset leaves /metrics open (keep it off the public network). */
  GATEHOUSE_METRICS_TOKEN: z.string().min(16, 'GATEHOUSE_METRICS_TOKEN must be at least 16 characters').optional(),
  /** `1`: SAML IdP URLs (SSO and metadata) may be http and loopback — local development and tests only. */
  GATEHOUSE_ALLOW_INSECURE_SAML: z.enum(['0', '1']).optional(),
  /** `1`: a generic OpenID Connect issuer may be http and loopback — local development and tests only. */
  GATEHOUSE_ALLOW_INSECURE_OIDC: z.enum(['0', '1']).optional(),
  /**
   * Seconds between SIGTERM and closing: `/readyz` answers 503 meanwhile, and the process keeps serving while the load
   * balancer notices. Unset: 5 on PostgreSQL (processes behind a balancer), 0 on the embedded database (one process).
   */
  GATEHOUSE_SHUTDOWN_DELAY_S: z.coerce.number().min(0).max(600).optional(),
  /**
   * Seconds during which a just-rotated refresh token, presented again (its answer was lost), answers the same
   * successor instead of revoking the session (default 30; 0 turns the grace off).
   */
  /** Seconds between housekeeping runs of each process (purging expired rows, renewals, domain re-checks); default 600. */
  GATEHOUSE_HOUSEKEEPING_INTERVAL_S: z.coerce.number().min(1).max(86_400).optional(),
  GATEHOUSE_REFRESH_GRACE_S: z.coerce.number().int().min(0).max(300).default(30),
  ...sharedOAuthVariables,
  GATEHOUSE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Set by npm: the directory the person ran `npm start` in (npm runs a workspace's scripts in the workspace). */
  INIT_CWD: z.string().optional(),
});
export type Env = z.infer<typeof EnvSchema>;

/** The operator's shared development clients, per provider, from `GATEHOUSE_SHARED_OAUTH_*`. */
export function sharedOAuthCredentials(env: Env): OAuthConfig['sharedCredentials'] {
  const vars = env as unknown as Record<string, string | undefined>;
  const found: OAuthConfig['sharedCredentials'] = {};
  for (const provider of BUILT_IN_PROVIDERS) {
    const clientId = vars[`GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_ID`];
    const clientSecret = vars[`GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_SECRET`];
    if (!clientId !== !clientSecret) {
      throw new StartupError(
        `Invalid configuration:\n  - GATEHOUSE_SHARED_OAUTH_${provider.toUpperCase()}_CLIENT_ID and _CLIENT_SECRET must be set together`,
      );
    }
    if (clientId && clientSecret) found[provider] = { clientId, clientSecret };
  }
  return found;
}

export { StartupError };

export function readEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const parsed = EnvSchema.safeParse(Object.fromEntries(Object.entries(source).filter(([, v]) => v !== '')));
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `  - ${i.path.join('.')}: ${i.message}`);
    throw new StartupError(['Invalid configuration:', ...problems].join('\n'));
  }
  return parsed.data;
}
