#!/usr/bin/env node
// Launches the bundled CLI. Kept tiny: everything else is in dist/gatehouse.js (built by build.ts).
import { existsSync } from 'node:fs';
import module from 'node:module';

const major = Number(process.versions.node.split('.')[0]);
const bundle = new URL('../dist/gatehouse.js', import.meta.url);
if (major < 24) {
  console.error(`gatehouse needs Node 24 or later (this is ${process.version}): run it through npx or npm run.`);
  process.exit(1);
}
if (!existsSync(bundle)) {
  console.error(
    'gatehouse is not built yet: run `npm run build -w @gatehouse/cli` (or run the sources: npx tsx apps/cli/src/index.tsx).',
  );
  process.exit(1);
}
// Node keeps the compiled code of the CLI and of the TypeScript it loads (types stripped) in its compile cache
// (under the system's temporary directory): a command then starts in about half the CPU time.
module.enableCompileCache?.();
await import(bundle.href);
