/**
 * Builds the publishable @gatehouse/cli into `apps/cli/publish/` (then `npm pack apps/cli/publish`): one self-contained
 * bundle for Node 20+ — the SDK, commander and ink included, so installing it pulls nothing else. The server's code
 * (`gatehouse migrate`, the operator token read from the server's data directory) is not published: there those
 * commands answer a usage error that says what to do instead (src/server-code.ts).
 */
import { chmod, cp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const cli = here('..');
const root = here('../../..');
const out = join(cli, 'publish');
const manifest = JSON.parse(await readFile(join(cli, 'package.json'), 'utf8'));

await rm(out, { recursive: true, force: true });
await mkdir(join(out, 'bin'), { recursive: true });
await build({
  entryPoints: { gatehouse: join(cli, 'src/index.tsx') },
  outdir: join(out, 'dist'),
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Only the server's code stays out (migrate); everything else travels in the bundle.
  external: ['@gatehouse/server', '@gatehouse/server/*', '@gatehouse/api'],
  plugins: [
    {
      // ink connects to React DevTools only when DEV=true; the published CLI ships without them.
      name: 'no-devtools',
      setup(builder) {
        builder.onResolve({ filter: /^react-devtools-core$/ }, () => ({ path: 'react-devtools-core', namespace: 'stub' }));
        builder.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: 'export default { connectToDevTools() {} };' }));
      },
    },
  ],
  jsx: 'automatic',
  // Bundled CommonJS dependencies call require(): give the ESM bundle one.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
  define: { 'process.env.NODE_ENV': '"production"' },
  logLevel: 'warning',
});
await writeFile(
  join(out, 'bin/gatehouse.js'),
  `#!/usr/bin/env node
const major = Number(process.versions.node.split('.')[0]);
if (major < 20) {
  console.error(\`gatehouse needs Node 20 or later (this is \${process.version}).\`);
  process.exit(1);
}
await import('../dist/gatehouse.js');
`,
);
await chmod(join(out, 'bin/gatehouse.js'), 0o755);
const publishable = {
  name: manifest.name,
  version: manifest.version,
  description: 'The gatehouse command line: manage a Gatehouse identity service (applications, keys, users, organizations)',
  license: 'MIT',
  type: 'module',
  bin: { gatehouse: './bin/gatehouse.js' },
  engines: { node: '>=20' },
  files: ['bin', 'dist', 'README.md', 'CHANGELOG.md', 'LICENSE'],
};
await writeFile(join(out, 'package.json'), `${JSON.stringify(publishable, null, 2)}\n`);
await cp(join(cli, 'README.md'), join(out, 'README.md'));
await cp(join(cli, 'CHANGELOG.md'), join(out, 'CHANGELOG.md'));
await cp(join(root, 'LICENSE'), join(out, 'LICENSE'));
