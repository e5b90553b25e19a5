/**
 * Checked by `npm run lint` (dependency-cruiser): no import cycle anywhere in the repository, and the layering of
 * packages/api — a module imports only what sits below it. Modules are ranked bottom to top; a module may import the kernel and lower-ranked modules,
 * never one ranked above it (so two modules can never import each other). The composition root (modules.ts, which lists
 * every module's declaration, router, openapi, index) is above everything. A new module folder must be ranked here, or lint fails.
 */
const LAYERS = {
  tenancy: ['applications', 'events', 'api-keys', 'signing-keys', 'messages', 'templates', 'application-setup'],
  identity: ['users', 'organizations', 'consent', 'sessions'],
  'sign-in flows': ['sign-in', 'mfa', 'passkeys', 'factors', 'saml', 'oauth'],
  integrations: ['stats', 'webhooks', 'domains', 'authz', 'billing', 'access-rules', 'oauth2'],
};
const RANKED = Object.values(LAYERS).flat();
const MODULES = '^packages/api/src/modules/';
const folder = (name) => `${MODULES}${name}/`;
const ROOT = '^packages/api/src/[^/]+[.]ts$';
const KERNEL = ['^packages/api/src/(context|trpc|errors)[.]ts$', '^packages/api/src/(db|lib)/'];

const upward = RANKED.slice(0, -1).map((name, rank) => ({
  name: `upward-from-${name}`,
  comment: `${name} may import only modules ranked below it (.dependency-cruiser.cjs)`,
  severity: 'error',
  from: { path: folder(name) },
  to: { path: RANKED.slice(rank + 1).map(folder) },
}));

module.exports = {
  forbidden: [
    { name: 'no-circular', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'kernel-imports-no-module',
      comment: 'The kernel (context, trpc, errors, db, lib) knows no module: module declarations fill its registries instead',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: [MODULES, ROOT], pathNot: KERNEL },
    },
    {
      name: 'modules-import-no-root',
      severity: 'error',
      from: { path: MODULES },
      to: { path: ROOT, pathNot: KERNEL },
    },
    {
      name: 'unranked-module',
      comment: 'Every module folder must have its place in LAYERS',
      severity: 'error',
      from: { path: MODULES, pathNot: RANKED.map(folder) },
      to: {},
    },
    ...upward,
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    exclude: { path: ['[.]test[.]ts$', '/migrations/', '/publish/'] },
  },
};
