// Loaded with `--import` into a server that a test starts: appends the URL of every module the process loads from
// node_modules to the file MODULE_LOG names, with the process id (a start may build the bundle in a child process),
// and at exit whether Node's fetch implementation (undici), its HTTP/2 module and its TLS module, three of Node's own,
// were ever loaded.
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.MODULE_LOG;
registerHooks({
  load(url, context, next) {
    if (file && url.includes('/node_modules/')) appendFileSync(file, `${process.pid} ${url}\n`);
    return next(url, context);
  },
});

process.on('exit', () => {
  if (!file) return;
  const loaded = (module) => process.moduleLoadList.some((name) => name.includes(module));
  appendFileSync(
    file,
    `${process.pid} exit undici=${loaded('undici')} http2=${loaded('http2')} tls=${process.moduleLoadList.includes('NativeModule tls')}\n`,
  );
});
