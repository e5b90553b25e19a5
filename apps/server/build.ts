import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AnyNode, parse } from 'acorn';
import { simple } from 'acorn-walk';
import { type BuildOptions, build, type Plugin } from 'esbuild';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const DIST = here('./dist');

/**
 * The npm packages that stay outside the bundle and load at run time from node_modules, as from the sources:
 * - the protocol libraries most requests never need, imported on first use (`import()`): oidc-provider, node-saml,
 *   the social sign-in clients, WebAuthn, the SMTP client;
 * - the rate limiter and its Redis client, which a server on PostgreSQL without Redis never loads (its counters are
 *   ours): the two work together only as they are installed (bundled, the rate limiter refused the Redis client);
 * - PGlite, which finds its WebAssembly, data and extension files beside its own module.
 * None of them imports a bundled package that must be one instance (MikroORM's classes): their own imports (jose,
 * koa, …) load from node_modules as theirs. Every other npm package is bundled: a start then resolves, reads and
 * compiles one file instead of two thousand (Node's loader was a third of the start).
 */
export const EXTERNAL = new Set([
  'oidc-provider',
  '@node-saml/node-saml',
  'arctic',
  'openid-client',
  '@simplewebauthn/server',
  'nodemailer',
  'rate-limiter-flexible',
  'ioredis',
  '@electric-sql/pglite',
]);

const externalNpmPackages: Plugin = {
  name: 'external-npm-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, ({ path }) => {
      const name = path
        .split('/')
        .slice(0, path.startsWith('@') ? 2 : 1)
        .join('/');
      return path.startsWith('node:') || EXTERNAL.has(name) ? { path, external: true } : undefined;
    });
  },
};

/**
 * Node's own modules as the bundled ES modules import them (ours, tRPC's, …): the module itself, taken with
 * `process.getBuiltinModule` as `require` takes it, and read where it is used (esbuild turns `import { x } from
 * 'node:fs'` into a read of `x` at each use, as for any CommonJS module). Not through Node's ES module wrapper of it:
 * that wrapper reads every export of the module at the first import, and some exports are getters that load more of
 * Node there and then — `node:fs`'s `ReadStream` its file streams, `node:crypto`'s `webcrypto` the Web Crypto API,
 * `node:http`'s `WebSocket` its fetch implementation (undici, about 13 MB resident) — tens of milliseconds at every
 * start of a server that uses none of them. (`require` of Node's modules is untouched: esbuild leaves it to Node.)
 */
const nodeModulesAsRequired: Plugin = {
  name: 'node-modules-as-required',
  setup(b) {
    b.onResolve({ filter: /^[a-z_/0-9:]+$/ }, ({ path, kind }) => {
      if (kind !== 'import-statement' || !isBuiltin(path)) return undefined;
      return { path: path.startsWith('node:') ? path : `node:${path}`, namespace: 'node-module' };
    });
    b.onLoad({ filter: /.*/, namespace: 'node-module' }, ({ path }) => ({
      contents: `module.exports = process.getBuiltinModule(${JSON.stringify(path)});`,
      loader: 'js',
    }));
  },
};

/**
 * What packages require at load but a server uses rarely or never, each replaced by an object that requires it at its
 * first use (a property read, a call or a `new`), so that its load and what it loads are not part of every start:
 * - `node:http2` and `node:https`, which fastify uses only to create an HTTP/2 or HTTPS server, which Gatehouse never
 *   asks for (about 5 ms for the one, and the other loads TLS);
 * - prom-client's Pushgateway, whose module requires `node:https` (and with it TLS) and `node:zlib` (about 12 ms), and
 *   its cluster aggregator (`node:cluster`): the server serves its metrics itself and pushes nowhere.
 */
const ON_FIRST_USE: { filter: RegExp; importer: RegExp }[] = [
  { filter: /^(node:)?(https|http2)$/, importer: /[\\/]node_modules[\\/]fastify[\\/]lib[\\/]server\.js$/ },
  { filter: /^\.\/lib\/(pushgateway|cluster)$/, importer: /[\\/]node_modules[\\/]prom-client[\\/]index\.js$/ },
];

const onFirstUse: Plugin = {
  name: 'on-first-use',
  setup(b) {
    for (const { filter, importer } of ON_FIRST_USE) {
      b.onResolve({ filter }, async ({ path, importer: from, kind, resolveDir }) => {
        if (kind !== 'require-call' || !importer.test(from)) return undefined;
        if (isBuiltin(path)) return { path, namespace: 'on-first-use', pluginData: { builtin: true } };
        const resolved = await b.resolve(path, { kind, resolveDir });
        return { path: resolved.path, namespace: 'on-first-use', pluginData: { builtin: false } };
      });
    }
    b.onLoad({ filter: /.*/, namespace: 'on-first-use' }, ({ path, pluginData }) => ({
      contents: [
        'let loaded;',
        pluginData.builtin
          ? `const load = () => (loaded ??= process.getBuiltinModule(${JSON.stringify(path)}));`
          : `const load = () => (loaded ??= require(${JSON.stringify(path)}));`,
        // A function as the target, so that a class (prom-client's) can be called with `new`.
        'module.exports = new Proxy(function onFirstUse() {}, {',
        '  get: (_, key) => load()[key],',
        '  has: (_, key) => key in load(),',
        '  apply: (_, self, args) => Reflect.apply(load(), self, args),',
        '  construct: (_, args) => Reflect.construct(load(), args),',
        '});',
      ].join('\n'),
      loader: 'js',
      resolveDir: dirname(path),
    }));
  },
};

/**
 * tRPC's object spread: its build compiles `{ ...a, ...b }` to Babel's `_objectSpread2`, defined once in its shared
 * helpers chunk, which copies property by property with `Object.defineProperty`. The bundle takes `objectSpread`
 * (src/object-spread.ts: `Object.assign`, with a spread's result) in its place. A tRPC whose helper is not there as
 * expected fails the build, rather than bundling it unchanged unnoticed.
 */
const TRPC_HELPERS = /[\\/]node_modules[\\/]@trpc[\\/]server[\\/]dist[\\/]getErrorShape-[\w-]+\.mjs$/;
const BABEL_SPREAD = /^function _objectSpread2\(e\) \{\n[\s\S]*?\n\treturn e;\n\}$/m;

const trpcObjectSpread: Plugin = {
  name: 'trpc-object-spread',
  setup(b) {
    b.onLoad({ filter: TRPC_HELPERS }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (source.match(new RegExp(BABEL_SPREAD, 'gm'))?.length !== 1)
        throw new Error(`${path}: tRPC's _objectSpread2 helper is not where build.ts expects it`);
      const helper = JSON.stringify(here('./src/object-spread.ts'));
      return {
        contents: `import { objectSpread as _objectSpread2 } from ${helper};\n${source.replace(BABEL_SPREAD, '')}`,
        loader: 'js',
        resolveDir: dirname(path),
      };
    });
  },
};

/**
 * How the server's code is bundled, for the server (below) and for a test that bundles part of it: Node 24's ES
 * modules, npm packages but `EXTERNAL` inside, and a `require` for the bundled CommonJS packages' own (of Node's
 * modules, and of their optional dependencies).
 */
export const bundling = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  // Functions and classes keep their names where the bundle renames them: packages read them (MikroORM looks its
  // Migrator extension up by `name`; renamed, it imported a second copy of itself from node_modules).
  keepNames: true,
  // No comments and no indentation: a third fewer bytes to read and compile. The packages' license comments go to a
  // `.LEGAL.txt` beside each chunk. With them goes the last text that kept the bundle from being ASCII (see `asciiOnly`).
  minifyWhitespace: true,
  legalComments: 'external',
  plugins: [nodeModulesAsRequired, onFirstUse, trpcObjectSpread, externalNpmPackages],
  banner: {
    js: [
      "import { createRequire as __gh_createRequire } from 'node:module';",
      'const require = __gh_createRequire(import.meta.url);',
    ].join('\n'),
  },
} satisfies BuildOptions;

/**
 * A module's own location, kept through bundling: `import.meta.url` (and `dirname`, `filename`) in the project's
 * sources means the source file, as when Node runs it, not the bundle (the console's files, the embedded database
 * template and the packages resolved from there are found beside the sources). Relative to the bundle, so the checkout
 * may move.
 */
const sourceLocation: Plugin = {
  name: 'source-location',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      if (!source.includes('import.meta.')) return { contents: source, loader: 'ts' };
      const url = `new URL(${JSON.stringify(relative(DIST, path).split('\\').join('/'))}, import.meta.url)`;
      const contents = source
        .replaceAll('import.meta.url', `${url}.href`)
        .replaceAll('import.meta.dirname', `__gh_dirname(${url})`)
        .replaceAll('import.meta.filename', `__gh_filename(${url})`);
      return { contents, loader: 'ts' };
    });
  },
};

/**
 * Refuses a chunk with a character outside ASCII. V8 keeps a module's source text for as long as the process runs (it
 * compiles functions when first called), one byte per character when the whole file is ASCII and two bytes otherwise;
 * and Node decodes a non-ASCII file much more slowly: one `·` made the start about a tenth slower and the idle heap
 * megabytes larger. esbuild writes every other non-ASCII character as an escape; the one place it cannot is the text of
 * a tagged template (its raw form would change): write an HTML entity there (`&middot;`), or a `${'…'}` substitution.
 */
function asciiOnly(path: string, text: string) {
  const at = text.search(/[\u0080-\uffff]/);
  if (at < 0) return;
  throw new Error(
    `${relative(DIST, path)} has a character outside ASCII (a tagged template's text?): …${text.slice(Math.max(0, at - 60), at + 20)}…`,
  );
}

/**
 * esbuild's `__name` (what `keepNames` calls), made to skip a function that already has the name. esbuild calls it for
 * every named function, nested ones too, each time the function is created: fastify's hook runner declares three
 * functions per hook of each request, and each call defined the `name` property again, with the name it already had
 * (a nested function is never renamed by the bundle). An arrow function given to it has no name yet and still gets it.
 * The helper is defined once, in the chunk of the runtime's helpers; the build fails when it is not found as written.
 */
const ESBUILD_NAME = 'var __name=(target,value)=>__defProp(target,"name",{value,configurable:true});';
export const CHEAPER_NAME =
  'var __name=(target,value)=>target.name===value?target:__defProp(target,"name",{value,configurable:true});';

function withCheaperNames(files: { path: string; text: string }[]): Map<string, string> {
  const patched = new Map<string, string>();
  for (const file of files) {
    if (!file.path.endsWith('.js')) continue;
    const text = withoutNeedlessNames(file.text);
    patched.set(file.path, text.includes(ESBUILD_NAME) ? text.replace(ESBUILD_NAME, CHEAPER_NAME) : text);
  }
  const helpers = [...patched.values()].filter((text) => text.includes(CHEAPER_NAME)).length;
  if (helpers !== 1) throw new Error(`esbuild's __name helper was found in ${helpers} chunks, not in one as build.ts expects`);
  return patched;
}

/**
 * `keepNames` also wraps an anonymous arrow or function expression bound to a name (`const onError = (err) => …` in
 * pg-pool's query, fastify's per-request closures): `__name(fn, "onError")`, which defines the property on every
 * creation, since such a function has no name of its own when it reaches the helper. Where the binding kept its
 * name in the bundle, the language gives the function that very name without the helper (a variable, a property, a
 * class field or an assignment names the anonymous function it is given), so the call is taken out: its `__name(` and
 * `, "onError")` become spaces, and the columns of the source map stay right. A renamed binding (`onError2`), a class,
 * or any other place keeps the call.
 */
export function withoutNeedlessNames(code: string): string {
  if (!code.includes('__name(')) return code;
  const blanks: Array<[number, number]> = [];
  const unwrap = (bound: string | undefined, value: AnyNode | null | undefined) => {
    if (bound === undefined || value?.type !== 'CallExpression') return;
    const { callee, arguments: args } = value;
    if (callee.type !== 'Identifier' || callee.name !== '__name' || args.length !== 2) return;
    const [fn, name] = args;
    const anonymous = fn?.type === 'ArrowFunctionExpression' || (fn?.type === 'FunctionExpression' && fn.id === null);
    if (!fn || !anonymous || name?.type !== 'Literal' || name.value !== bound) return;
    blanks.push([value.start, fn.start], [fn.end, value.end]);
  };
  const keyName = (key: AnyNode, computed: boolean) =>
    computed ? undefined : key.type === 'Identifier' ? key.name : key.type === 'Literal' ? String(key.value) : undefined;
  simple(parse(code, { ecmaVersion: 'latest', sourceType: 'module' }), {
    VariableDeclarator: (node) => unwrap(node.id.type === 'Identifier' ? node.id.name : undefined, node.init),
    AssignmentExpression: (node) =>
      unwrap(node.operator === '=' && node.left.type === 'Identifier' ? node.left.name : undefined, node.right),
    Property: (node) => unwrap(node.kind === 'init' && !node.method ? keyName(node.key, node.computed) : undefined, node.value),
    PropertyDefinition: (node) => unwrap(keyName(node.key, node.computed), node.value),
  });
  let out = '';
  let at = 0;
  for (const [from, to] of blanks.sort((a, b) => a[0] - b[0])) {
    out += code.slice(at, from) + ' '.repeat(to - from);
    at = to;
  }
  return out + code.slice(at);
}

/**
 * Bundles the server into dist/main.js (what `npm start` runs, through start.js): the project's own TypeScript — this
 * app and the workspace packages — and the npm packages it uses (but `EXTERNAL`) become JavaScript in a few files, so
 * a start neither loads Node's type stripper (about 17 MB resident) nor resolves and reads thousands of modules. What
 * the sources import on first use (`import()`: the embedded database's driver, the OpenAPI document) is a chunk of its
 * own (beside main.js in dist/), loaded then. dist/inputs.json lists the sources, for start.js to see when the bundle
 * is older than one of them; for the npm packages it lists node_modules/.package-lock.json, which npm rewrites
 * whenever it changes node_modules, and it lists this file.
 */
export async function buildServer(): Promise<void> {
  const result = await build({
    entryPoints: { main: here('./src/main.ts') },
    absWorkingDir: here('.'),
    outdir: DIST,
    ...bundling,
    splitting: true,
    // Beside the entry, never in a folder of their own: a source's `import.meta.url` is written relative to dist/.
    chunkNames: '[name]-[hash]',
    plugins: [...bundling.plugins, sourceLocation],
    banner: {
      js: [
        bundling.banner.js,
        "import { dirname as __gh_dirname_of } from 'node:path';",
        "import { fileURLToPath as __gh_path_of } from 'node:url';",
        'const __gh_filename = (url) => __gh_path_of(url);',
        'const __gh_dirname = (url) => __gh_dirname_of(__gh_path_of(url));',
      ].join('\n'),
    },
    metafile: true,
    sourcemap: 'linked',
    logLevel: 'warning',
    // Written below, each file by rename: a start reading the bundle while another start builds it (two processes of
    // a deployment, started together) reads a whole file, the old or the new.
    write: false,
  });
  const replace = async (path: string, contents: string | Uint8Array) => {
    await writeFile(`${path}.${process.pid}.tmp`, contents);
    await rename(`${path}.${process.pid}.tmp`, path);
  };
  for (const file of result.outputFiles) if (file.path.endsWith('.js')) asciiOnly(file.path, file.text);
  const patched = withCheaperNames(result.outputFiles);
  const contents = (file: (typeof result.outputFiles)[number]) => patched.get(file.path) ?? file.contents;
  await mkdir(DIST, { recursive: true });
  // The chunks before the entry that imports them.
  const entry = join(DIST, 'main.js');
  for (const file of result.outputFiles) if (file.path !== entry) await replace(file.path, contents(file));
  for (const file of result.outputFiles) if (file.path === entry) await replace(file.path, contents(file));
  // Earlier builds' chunks stay a day: a process started from an earlier entry may still import one on first use.
  const kept = new Set([...result.outputFiles.map((file) => file.path), join(DIST, 'inputs.json')]);
  for (const name of await readdir(DIST)) {
    const path = join(DIST, name);
    if (kept.has(path)) continue;
    if (Date.now() - (await stat(path)).mtimeMs > 86_400_000) await rm(path, { force: true });
  }
  // Relative to dist/, as the bundle's own references to the sources are.
  const inputs = [
    ...Object.keys(result.metafile.inputs)
      // Files only: a plugin's module (`namespace:path`) has none, and a missing input would rebuild at every start.
      .filter((input) => !/^[\w-]+:/.test(input))
      .map((input) => resolve(here('.'), input))
      .filter((input) => !input.split(sep).includes('node_modules')),
    here('../../node_modules/.package-lock.json'),
    here('./build.ts'),
  ].map((input) => relative(DIST, input).split(sep).join('/'));
  // Last: the list of sources is the bundle's own only once the bundle is in place.
  await replace(here('./dist/inputs.json'), `${JSON.stringify(inputs)}\n`);
}

if (import.meta.main) await buildServer();
