/**
 * The scopes a secret key can hold (CONTRACT §3). The vocabulary is the contract's, shared by every module's
 * procedures, so it lives in the kernel; `x:write` implies `x:read` and `*` grants everything.
 */
export const SCOPES = [
  '*',
  'api_keys:read',
  'api_keys:write',
  'users:read',
  'users:write',
  'organizations:read',
  'organizations:write',
  'saml:read',
  'saml:write',
  'settings:read',
  'settings:write',
  'webhooks:read',
  'webhooks:write',
  'authz:read',
  'authz:write',
  'billing:read',
  'billing:write',
  'access_rules:read',
  'access_rules:write',
  'stats:read',
  'oauth2:read',
  'oauth2:write',
  'directories:read',
  'directories:write',
  'audit_logs:read',
] as const;

export type Scope = (typeof SCOPES)[number];

const SCOPE_SET: ReadonlySet<string> = new Set(SCOPES);

export const isScope = (value: string): value is Scope => SCOPE_SET.has(value);
