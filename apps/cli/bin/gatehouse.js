#!/usr/bin/env node
// Launches the bundled CLI. Kept tiny: everything else is in dist/gatehouse.js (built by build.ts).
import { existsSync } from 'node:fs';

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
await import(bundle.href);
