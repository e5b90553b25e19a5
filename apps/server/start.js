// `npm start` and `npm run migrate`: run the bundled server (dist/main.js, made by build.ts), built again first when it
// is missing or older than one of its sources — so an edit to the sources is what the next start runs. Plain
// JavaScript, as the bundle is: Node's type stripper is never loaded (about 17 MB resident, and the stripping of two
// hundred files at every start).
// Node's modules through process.getBuiltinModule, not `import`: Node's ES module wrapper of a module reads all its
// exports, and node:fs's ReadStream and WriteStream getters would load its file streams, which a start never uses.
const { readFileSync, statSync } = process.getBuiltinModule('node:fs');
const module = process.getBuiltinModule('node:module');

const dist = new URL('./dist/', import.meta.url);
const bundle = new URL('main.js', dist);

/** Whether the bundle is missing, or older than any source it was built from (dist/inputs.json). */
function stale() {
  let built;
  let inputs;
  try {
    built = statSync(bundle).mtimeMs;
    inputs = JSON.parse(readFileSync(new URL('inputs.json', dist), 'utf8'));
  } catch {
    return true;
  }
  return inputs.some((input) => {
    try {
      return statSync(new URL(input, dist)).mtimeMs > built;
    } catch {
      return true; // a source that is gone: the bundle's list of sources is out of date
    }
  });
}

if (stale()) {
  // In a child process: the bundler (and the type stripper its TypeScript needs) stays out of the server's memory.
  // Node's child_process module loads only then (a start from an up-to-date bundle never needs it).
  const { spawnSync } = await import('node:child_process');
  const built = spawnSync(process.execPath, [new URL('./build.ts', import.meta.url).pathname], { stdio: 'inherit' });
  if (built.status !== 0) process.exit(built.status ?? 1);
}
// Node keeps the bundle's and the npm packages' compiled code in its compile cache (under the system's temporary
// directory, or NODE_COMPILE_CACHE): a restart does not compile them again.
module.enableCompileCache?.();
await import(bundle.href);
