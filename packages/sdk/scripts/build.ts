/**
 * Builds the publishable @gatehouse/sdk into `packages/sdk/publish/` (then `npm pack packages/sdk/publish` or
 * `npm publish packages/sdk/publish`):
 * - JavaScript: esbuild, ESM for Node 20+ and browsers, one file per entry (`.`, `./browser`, `./verify`, `./webhooks`,
 *   and the framework guards `./express`, `./fastify`, `./next`) with shared chunks, npm dependencies external;
 * - types: `tsc` declarations, with the server router's type made self-contained (`types/api.d.ts`: every procedure's
 *   input and output inlined by tsc; the server-only context and meta types erased), so the published types need no
 *   server code;
 * - package.json: the workspace one with `exports` to the built files, without `private` or workspace dependencies,
 *   with @simplewebauthn/browser as an optional peer (only the browser client's passkeys load it) beside the workspace's
 *   own optional peers (express and fastify, whose guards only type against them).
 * In the monorepo nothing changes: workspaces keep importing the TypeScript sources.
 */
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { ERROR_CODES } from '../../api/src/errors.ts';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const sdk = here('..');
const root = here('../../..');
const out = join(sdk, 'publish');
const ENTRIES = {
  index: 'src/index.ts',
  client: 'src/client.ts',
  verify: 'src/verify.ts',
  webhooks: 'src/webhooks.ts',
  express: 'src/express.ts',
  fastify: 'src/fastify.ts',
  next: 'src/next.ts',
};

const manifest = JSON.parse(await readFile(join(sdk, 'package.json'), 'utf8'));
await rm(out, { recursive: true, force: true });
await mkdir(join(out, 'dist', 'types'), { recursive: true });

await build({
  entryPoints: Object.fromEntries(Object.entries(ENTRIES).map(([name, path]) => [name, join(sdk, path)])),
  outdir: join(out, 'dist'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'neutral',
  target: ['node20', 'es2022'],
  external: [
    ...Object.keys(manifest.dependencies).filter((name) => !name.startsWith('@gatehouse/')),
    ...Object.keys(manifest.peerDependencies ?? {}),
  ],
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});

// Declarations of the SDK and of the API it imports types from (tsc emits both; the API's router is then made
// self-contained below).
const declarations = join(sdk, 'publish-types');
await rm(declarations, { recursive: true, force: true });
const tsconfig = join(sdk, 'publish-types.tsconfig.json');
await writeFile(
  tsconfig,
  JSON.stringify({
    extends: '@gatehouse/tsconfig/base.json',
    compilerOptions: {
      noEmit: false,
      declaration: true,
      emitDeclarationOnly: true,
      rootDir: join(root, 'packages'),
      outDir: declarations,
    },
    files: [...Object.values(ENTRIES).map((path) => join(sdk, path)), join(root, 'packages/api/src/router.ts')],
  }),
);
try {
  execFileSync(join(root, 'node_modules/.bin/tsc'), ['-p', tsconfig], { stdio: 'inherit' });
} finally {
  await rm(tsconfig, { force: true });
}

const relativeJs = (text: string) => text.replace(/(from\s+'\.\/[^']+)\.ts'/g, "$1.js'");
for (const file of await readdir(join(declarations, 'sdk/src'))) {
  if (!file.endsWith('.d.ts')) continue;
  const text = await readFile(join(declarations, 'sdk/src', file), 'utf8');
  await writeFile(join(out, 'dist/types', file), relativeJs(text).replaceAll("from '@gatehouse/api'", "from './api.js'"));
}
// The router's type: inputs and outputs are inlined by tsc; what only the server has (its request context, the meta
// of its procedures, the error table) is replaced by what a client sees of it.
const router = (await readFile(join(declarations, 'api/src/router.d.ts'), 'utf8'))
  .replaceAll('import("./context.ts").Context', 'object')
  .replaceAll('import("./trpc.ts").Meta', 'object')
  .replaceAll('import("./errors.ts").ErrorDetails', '{ path: string; message: string }[] | { readonly organization_id: string }')
  .replaceAll('import("./errors.ts").ErrorDetail', '{ path: string; message: string }');
const leftover = router.match(/import\("\.[^"]*"\)/);
if (leftover) throw new Error(`router.d.ts still imports server code: ${leftover[0]}`);
// The API's error codes (`GatehouseError.code`), written out from the one table of them.
const errorCodes = Object.keys(ERROR_CODES)
  .map((code) => `'${code}'`)
  .join(' | ');
await writeFile(
  join(out, 'dist/types/api.d.ts'),
  `// The Gatehouse API router's type, generated from the server's router by packages/sdk/scripts/build.ts.\n${router}\n` +
    `/** Every error code the API answers (\`error.code\`). */\nexport type ErrorCode = ${errorCodes};\n`,
);
await rm(declarations, { recursive: true, force: true });

/**
 * What only the browser client's passkey ceremonies use (loaded at the first one): an optional peer, so that a backend
 * that installs the SDK does not get it. The workspace keeps it as a dependency for the tests that run in a browser.
 */
const BROWSER_ONLY: Record<string, string> = {
  '@simplewebauthn/browser': manifest.dependencies['@simplewebauthn/browser'],
};
const entry = (name: string) => ({ types: `./dist/types/${name}.d.ts`, import: `./dist/${name}.js` });
const publishable = {
  name: manifest.name,
  version: manifest.version,
  description:
    'TypeScript SDK of Gatehouse: the management client, the browser sign-in client, offline token verification and API guards for Express, Fastify and Next.js',
  license: 'MIT',
  type: 'module',
  engines: { node: '>=20' },
  sideEffects: false,
  exports: {
    '.': entry('index'),
    './browser': entry('client'),
    './verify': entry('verify'),
    './webhooks': entry('webhooks'),
    './express': entry('express'),
    './fastify': entry('fastify'),
    './next': entry('next'),
    './package.json': './package.json',
  },
  files: ['dist', 'README.md', 'CHANGELOG.md', 'LICENSE'],
  dependencies: Object.fromEntries(
    Object.entries(manifest.dependencies).filter(([name]) => !name.startsWith('@gatehouse/') && !(name in BROWSER_ONLY)),
  ),
  peerDependencies: { ...BROWSER_ONLY, ...manifest.peerDependencies },
  peerDependenciesMeta: {
    ...Object.fromEntries(Object.keys(BROWSER_ONLY).map((name) => [name, { optional: true }])),
    ...manifest.peerDependenciesMeta,
  },
};
await writeFile(join(out, 'package.json'), `${JSON.stringify(publishable, null, 2)}\n`);
for (const [from, to] of [
  [join(sdk, 'README.md'), 'README.md'],
  [join(sdk, 'CHANGELOG.md'), 'CHANGELOG.md'],
  [join(root, 'LICENSE'), 'LICENSE'],
] as const) {
  await cp(from, join(out, to));
}
