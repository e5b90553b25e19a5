/**
 * `node bench/profile.ts <file.cpuprofile> [--from F] [--to F] [--top N]`: what a CPU profile that BENCH_PROFILE_DIR
 * kept (or any `node --cpu-prof` profile) spent its time on, as text: the samples between fractions F of the profile's
 * duration (a suite's server profile covers its start and every load one after the other; `--from 0.5 --to 0.9` picks
 * the later load), by package (the npm package, the workspace source folder, Node's own modules, native code), by
 * function (self time), and inclusive. The bundled server's frames are mapped back through its source maps
 * (`apps/server/dist/*.js.map`) to the source file and package they came from. Idle samples are counted apart.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: '1' },
    top: { type: 'string', default: '30' },
  },
});
const [file] = positionals;
if (!file) throw new Error('usage: node bench/profile.ts <file.cpuprofile> [--from F] [--to F] [--top N]');
const from = Number(values.from);
const to = Number(values.to);
const top = Number(values.top);

// A .cpuprofile is this JSON (Chrome DevTools' Profile); nothing else reads it.
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

/** A frame's source: through the bundle's source map when it has one. */
const sourceMaps = new Map<string, SourceMap | undefined>();
function sourceOf(frame: CallFrame): { path: string; line: number } {
  if (!frame.url.startsWith('file:')) return { path: frame.url, line: frame.lineNumber + 1 };
  const path = fileURLToPath(frame.url);
  if (!sourceMaps.has(path)) {
    const map = `${path}.map`;
    // A source map file is JSON in the Source Map v3 format, which SourceMap takes as it is.
    sourceMaps.set(path, existsSync(map) ? new SourceMap(JSON.parse(readFileSync(map, 'utf8'))) : undefined);
  }
  const entry = sourceMaps.get(path)?.findEntry(frame.lineNumber, frame.columnNumber);
  return entry && 'originalSource' in entry
    ? { path: entry.originalSource, line: entry.originalLine + 1 }
    : { path, line: frame.lineNumber + 1 };
}

/** The npm package, the workspace folder (`packages/api/src/modules/…`), Node's own modules, or native code. */
function packageOf(path: string): string {
  const npm = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(path);
  if (npm?.[1]) return npm[1];
  if (path.startsWith('node:')) return "Node's modules";
  if (!path) return 'native (V8, libuv, system calls)';
  const workspace = /(?:^|\/)((?:packages|apps|bench)\/.*)$/.exec(path.replace(/^file:\/\//, ''));
  return workspace?.[1] ? workspace[1].split('/').slice(0, 4).join('/') : path;
}

const labels = new Map<number, { label: string; pkg: string }>();
function labelOf(id: number) {
  let known = labels.get(id);
  if (!known) {
    const frame = nodes.get(id)?.callFrame ?? { functionName: '?', url: '', lineNumber: 0, columnNumber: 0 };
    const { path, line } = sourceOf(frame);
    const short = path.replace(/^.*node_modules\//, '').replace(/^.*\/((packages|apps|bench)\/)/, '$1');
    known = { label: `${frame.functionName || '(anonymous)'} ${short}${short ? `:${line}` : ''}`, pkg: packageOf(path) };
    labels.set(id, known);
  }
  return known;
}

const span = profile.endTime - profile.startTime;
const [start, end] = [profile.startTime + span * from, profile.startTime + span * to];
const self = new Map<string, number>();
const inclusive = new Map<string, number>();
const byPackage = new Map<string, number>();
const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
let at = profile.startTime;
let busy = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i] ?? 0;
  if (at < start || at > end) return;
  const name = nodes.get(id)?.callFrame.functionName;
  if (name === '(idle)') {
    idle++;
    return;
  }
  busy++;
  const { label, pkg } = labelOf(id);
  add(self, label);
  add(byPackage, pkg);
  const seen = new Set<string>();
  for (let node: number | undefined = id; node !== undefined; node = parents.get(node)) {
    const outer = labelOf(node).label;
    if (!seen.has(outer)) add(inclusive, outer);
    seen.add(outer);
  }
});

const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [key, count] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`${((100 * count) / Math.max(busy, 1)).toFixed(1).padStart(6)} %  ${key}`);
  }
};
console.log(
  `${file}: ${((end - start) / 1e6).toFixed(1)} s of ${(span / 1e6).toFixed(1)} s; ${busy} busy samples, ${idle} idle (percentages of the busy ones)`,
);
print('By package (self time)', byPackage);
print('By function (self time)', self);
print('Inclusive (the function and what it called)', inclusive);
