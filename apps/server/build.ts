import { existsSync, realpathSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url));
const DIST = here('./dist');

/** The folder of the package `name` that Node finds from the folder `from` (the nearest node_modules holding it). */
function packageFolder(from: string, name: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return realpathSync(candidate);
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * npm packages stay external and resolve at run time, as from the sources — unless the bundle's folder would find
 * another copy than the importing source does (a workspace package's own, nested version in its node_modules, such as
 * packages/api's @xmldom/xmldom): that one is bundled from where the source finds it. Workspace packages
 * (@gatehouse/*) are bundled.
 */
export const externalNpmPackages: Plugin = {
  name: 'external-npm-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./]/ }, ({ path, resolveDir }) => {
      if (path.startsWith('@gatehouse/')) return undefined;
      const name = path
        .split('/')
        .slice(0, path.startsWith('@') ? 2 : 1)
        .join('/');
      if (!path.startsWith('node:') && packageFolder(resolveDir, name) !== packageFolder(DIST, name)) return undefined;
      return { path, external: true };
    });
  },
};

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
 * Bundles the server into dist/main.js (what `npm start` runs, through start.js): the project's own TypeScript — this
 * app and the workspace packages — becomes one JavaScript file, so a start neither loads Node's type stripper (about
 * 17 MB resident) nor strips two hundred files. npm packages stay external and load as they do from the sources,
 * the rarely used protocol libraries on first use. dist/inputs.json lists the sources, for start.js to see when the
 * bundle is older than one of them.
 */
export async function buildServer(): Promise<void> {
  const result = await build({
    entryPoints: { main: here('./src/main.ts') },
    absWorkingDir: here('.'),
    outdir: DIST,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    plugins: [externalNpmPackages, sourceLocation],
    banner: {
      js: [
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
  await mkdir(DIST, { recursive: true });
  const replace = async (path: string, contents: string | Uint8Array) => {
    await writeFile(`${path}.${process.pid}.tmp`, contents);
    await rename(`${path}.${process.pid}.tmp`, path);
  };
  for (const file of result.outputFiles) await replace(file.path, file.contents);
  // Relative to dist/, as the bundle's own references to the sources are.
  const inputs = Object.keys(result.metafile.inputs).map((input) =>
    relative(DIST, resolve(here('.'), input))
      .split('\\')
      .join('/'),
  );
  // Last: the list of sources is the bundle's own only once the bundle is in place.
  await replace(here('./dist/inputs.json'), `${JSON.stringify(inputs)}\n`);
}

if (import.meta.main) await buildServer();
