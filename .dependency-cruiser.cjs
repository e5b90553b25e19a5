/**
 * Checked by `npm run lint` (dependency-cruiser): no import cycle anywhere in the repository, and the layering of
 * packages/api. Modules are ranked bottom to top in the order below; a module may import the kernel and lower-ranked
 * modules, never one ranked above it (so two modules can never import each other). The composition root (modules.ts,
 * the list of every module's declaration; router, openapi, index, …) is above everything. A new module folder must be ranked here, or lint fails.
 *
 * The ranking is one order; the code's shape is a tree (ARCHITECTURE.md "Layers"): a trunk applications → users →
 * sessions → sign-in with the sign-in flows on top, and the features beside sign-in, which branch off below it. The
 * groups name those parts; `beside-sign-in` keeps the branches off the sign-in part of the trunk.
 */
const LAYERS = {
  // The tenant and what every module records: events, keys, messages and their templates.
  tenancy: ['applications', 'events', 'api-keys', 'signing-keys', 'messages', 'templates', 'application-setup'],
  // End users, their organizations, consents and sessions: the trunk under sign-in.
  users: ['users', 'organizations', 'consent', 'sessions'],
  // Signing people in: the one decision (sign-in), the flows that end in it, and the host rules that veto it.
  'sign-in': ['sign-in', 'mfa', 'passkeys', 'factors', 'saml', 'oauth', 'access-rules'],
  // Features beside sign-in: they build on tenancy and users only (rule beside-sign-in), whatever their rank.
  features: ['stats', 'webhooks', 'domains', 'authz', 'billing', 'oauth2', 'invitations', 'audit-logs', 'directories'],
  // Enterprise onboarding: organization domains (on organizations, custom domains' DNS check and sign-in's
  // registries), the admin portal, which combines the features and sign-in's SAML for one organization, and the
  // console's operators (a user of the console application, its magic link, its OpenID client).
  enterprise: ['organization-domains', 'portal', 'operators'],
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
    {
      name: 'beside-sign-in',
      comment: 'A feature beside sign-in imports nothing of sign-in or sessions: it builds on tenancy and users only',
      severity: 'error',
      from: { path: LAYERS.features.map(folder) },
      to: {
        path: [...LAYERS['sign-in'], 'sessions'].map(folder),
        // The signed-in caller (its procedure builder and context) and the hosted pages' browser session (which the
        // OpenID provider's login policy reads) are credentials, not the session machinery.
        pathNot: '^packages/api/src/modules/sessions/(signed-in|contexts|browser-sessions)[.]ts$',
      },
    },
    ...upward,
  ],
  options: {
    parser: 'swc',
    doNotFollow: { path: 'node_modules' },
    // dist/: the console's built bundle (its chunks import each other; the sources are checked instead).
    exclude: { path: ['[.]test[.]ts$', '/migrations/', '/publish/', '^apps/console/dist/'] },
  },
};
