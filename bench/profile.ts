/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`) of a server child: the samples taken inside a time window, by
 * package and by function. A sample belongs to the function on top of the stack (the functions table); for the
 * packages table it is charged to the nearest package on the stack: Node's own modules and native code (a socket
 * write, the Ed25519 check of WebCrypto, a V8 builtin) count for the package that called them — the socket write of a
 * response for fastify, the signature check for jose. What no package called (HTTP parsing, timers, the event loop)
 * stays "node". Garbage collection and V8's "(program)" are buckets of their own.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Milliseconds of samples in the window that were not idle. */
  busyMs: number;
  /** Milliseconds of idle samples in the window (the thread waited for I/O). */
  idleMs: number;
  packages: Array<{ name: string; ms: number; share: number }>;
  functions: Array<{ name: string; where: string; pkg: string; ms: number; share: number }>;
}

const packageNames = new Map<string, string>();

/** The `name` of the nearest package.json above a file (a nested one without a name, like dist/esm's, is skipped). */
function packageOf(file: string, root: string): string {
  let dir = dirname(file);
  const seen: string[] = [];
  for (let depth = 0; depth < 30; depth++) {
    const known = packageNames.get(dir);
    if (known) {
      for (const d of seen) packageNames.set(d, known);
      return known;
    }
    seen.push(dir);
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const name = (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name;
        if (name) {
          for (const d of seen) packageNames.set(d, name);
          return name;
        }
      } catch {
        // not JSON: keep looking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return relative(root, file).split('/')[0] || 'unknown';
}

function where(url: string, root: string): { pkg: string; file: string } {
  if (url.startsWith('node:')) return { pkg: 'node (built-in modules)', file: url };
  if (url.startsWith('file://')) {
    const file = fileURLToPath(url);
    return { pkg: packageOf(file, root), file: relative(root, file).replace(/^.*node_modules\//, '') };
  }
  return { pkg: url ? 'other' : '', file: url };
}

const NO_PACKAGE = 'node, called by no package (HTTP parsing, timers, the event loop)';
const SPECIAL = new Map([
  ['(garbage collector)', 'V8: garbage collection'],
  ['(program)', 'V8: (program), native code with no JavaScript on the stack (I/O, the event loop, compiling)'],
  ['(root)', 'V8: (root)'],
]);

/**
 * `fromMs`/`toMs`: the window, in milliseconds on the monotonic clock (`process.hrtime`), which V8's profile
 * timestamps use too (microseconds), so the benchmark's window can be cut out of the child's profile.
 */
export function summarizeProfile(path: string, root: string, fromMs: number, toMs: number, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  // Where each node's samples are charged: the top frame names the function; the nearest frame in a package (a
  // file outside Node itself) names the package.
  const charged = new Map<number, { pkg: string; name: string; where: string }>();
  const chargeOf = (id: number) => {
    const cached = charged.get(id);
    if (cached) return cached;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    let result: { pkg: string; name: string; where: string };
    const special = SPECIAL.get(functionName);
    if (special) {
      result = { pkg: special, name: functionName, where: '' };
    } else if (functionName === '(idle)') {
      result = { pkg: '(idle)', name: '(idle)', where: '' };
    } else {
      let pkg: string | undefined;
      for (let up: number | undefined = id; up !== undefined && !pkg; up = parent.get(up)) {
        const frame = byId.get(up)!.callFrame;
        if (frame.url.startsWith('file://')) pkg = where(frame.url, root).pkg;
      }
      const name = `${functionName || '(anonymous)'}${url ? '' : ' (native)'}`;
      result = { pkg: pkg ?? NO_PACKAGE, name, where: url ? `${where(url, root).file}:${lineNumber + 1}` : '' };
    }
    charged.set(id, result);
    return result;
  };

  const packages = new Map<string, number>();
  const functions = new Map<string, { name: string; where: string; pkg: string; ms: number }>();
  let busyMs = 0;
  let idleMs = 0;
  // Sample i was taken at startTime + Σ timeDeltas[0..i]; it stands for the time until the next one.
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    const ms = ((profile.timeDeltas[i + 1] ?? 0) > 0 ? profile.timeDeltas[i + 1]! : 0) / 1000;
    if (at / 1000 < fromMs || at / 1000 > toMs) continue;
    const charge = chargeOf(profile.samples[i]!);
    if (charge.pkg === '(idle)') {
      idleMs += ms;
      continue;
    }
    busyMs += ms;
    packages.set(charge.pkg, (packages.get(charge.pkg) ?? 0) + ms);
    const key = `${charge.name}@${charge.where}@${charge.pkg}`;
    const entry = functions.get(key) ?? { ...charge, ms: 0 };
    entry.ms += ms;
    functions.set(key, entry);
  }
  const share = (ms: number) => (busyMs ? ms / busyMs : 0);
  return {
    busyMs,
    idleMs,
    packages: [...packages].map(([name, ms]) => ({ name, ms, share: share(ms) })).sort((a, b) => b.ms - a.ms),
    functions: [...functions.values()]
      .map((f) => ({ ...f, share: share(f.ms) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, top),
  };
}
