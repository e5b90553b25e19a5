/**
 * `npm run size -w @gatehouse/console`: the gzip size of what the console's first page load fetches (the entry script,
 * the modules it preloads, the stylesheet), against the budget of 250 kB of JavaScript; and a check that no server
 * code reached the browser bundle (the router is imported for its types only). Exits 1 when either fails.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

const BUDGET_KB = 250;
const dist = join(import.meta.dirname, '..', 'dist');
const html = readFileSync(join(dist, 'index.html'), 'utf8');

/** The files index.html loads: `/console/assets/…` in script src, modulepreload and stylesheet links. */
const initial = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+)"/g)].map((m) => m[1] as string);
const kb = (bytes: number) => (bytes / 1000).toFixed(1);

let js = 0;
let css = 0;
for (const file of initial) {
  const bytes = readFileSync(join(dist, file));
  const gzipped = gzipSync(bytes, { level: 9 }).length;
  if (file.endsWith('.js')) js += gzipped;
  else if (file.endsWith('.css')) css += gzipped;
  console.log(`${file.padEnd(48)} ${kb(bytes.length).padStart(8)} kB  gzip ${kb(gzipped).padStart(7)} kB`);
}
const chunks = readdirSync(join(dist, 'assets')).filter((f) => f.endsWith('.js'));
console.log(`initial JavaScript: ${kb(js)} kB gzip (budget ${BUDGET_KB} kB); stylesheet ${kb(css)} kB gzip`);
console.log(`${chunks.length} script chunks in all; the others load with the page that needs them`);

/** Names only server code carries: the ORM, the database drivers, the HTTP server, Node's built-in modules. */
const SERVER_MARKERS = [
  '@mikro-orm',
  'MikroORM',
  'pglite',
  'fastify',
  'nodemailer',
  'oidc-provider',
  'from"node:',
  "from 'node:",
];
const leaks = chunks.flatMap((file) => {
  const text = readFileSync(join(dist, 'assets', file), 'utf8');
  return SERVER_MARKERS.filter((marker) => text.includes(marker)).map((marker) => `${file}: ${marker}`);
});
if (leaks.length) console.error(`server code in the bundle:\n  ${leaks.join('\n  ')}`);
if (/<script(?![^>]*\bsrc=)[^>]*>/.test(html) || /<style[\s>]/.test(html))
  console.error('index.html has an inline script or style');
if (js / 1000 > BUDGET_KB) console.error(`initial JavaScript over the budget: ${kb(js)} kB > ${BUDGET_KB} kB`);
if (leaks.length || js / 1000 > BUDGET_KB || /<script(?![^>]*\bsrc=)[^>]*>/.test(html) || /<style[\s>]/.test(html)) {
  process.exitCode = 1;
}
