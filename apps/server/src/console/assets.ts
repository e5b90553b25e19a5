import { readdir, readFile } from 'node:fs/promises';
import { extname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The console's built page (`apps/console/dist`, made by `npm install`'s build), held in memory. */
export interface ConsoleAssets {
  index: Buffer;
  /** Each file by its path under dist (`assets/index-….js`), with a gzip copy when that is smaller. */
  files: Map<string, { type: string; body: Buffer; gzip?: Buffer }>;
}

const DIST = fileURLToPath(new URL('../../../console/dist/', import.meta.url));

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.html': 'text/html; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

let loaded: Promise<ConsoleAssets | undefined> | undefined;

async function load(): Promise<ConsoleAssets | undefined> {
  let index: Buffer;
  try {
    index = await readFile(join(DIST, 'index.html'));
  } catch {
    return undefined;
  }
  // Imported here, on the first request for the console: not a module every start loads.
  const { gzipSync } = await import('node:zlib');
  const files: ConsoleAssets['files'] = new Map();
  for (const entry of await readdir(DIST, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const full = join(entry.parentPath, entry.name);
    const path = relative(DIST, full).split('\\').join('/');
    const type = TYPES[extname(entry.name)];
    if (!type || path === 'index.html') continue;
    const body = await readFile(full);
    const gzip = /^(text|image\/svg|application\/json)/.test(type) ? gzipSync(body) : undefined;
    files.set(path, { type, body, ...(gzip && gzip.length < body.length ? { gzip } : {}) });
  }
  return { index, files };
}

/**
 * The console's files, read once per process (undefined while the page is not built: the next request looks again).
 */
export async function consoleAssets(): Promise<ConsoleAssets | undefined> {
  loaded ??= load();
  const assets = await loaded;
  if (!assets) loaded = undefined;
  return assets;
}
