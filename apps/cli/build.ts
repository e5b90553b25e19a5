import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));

/**
 * Bundles the CLI into dist/gatehouse.js (what bin/gatehouse.js runs). npm packages, the workspace ones included, stay
 * external and resolve at run time: Node 24 runs the workspace packages' TypeScript sources natively.
 */
export async function buildCli(): Promise<void> {
  await build({
    entryPoints: { gatehouse: here('./src/index.tsx') },
    outdir: here('./dist'),
    // The terminal UI (ink) is a separate chunk, loaded only when output goes to a terminal.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    packages: 'external',
    jsx: 'automatic',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}

if (import.meta.main) await buildCli();
