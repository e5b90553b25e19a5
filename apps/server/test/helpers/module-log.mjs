// Loaded with `--import` into a server that a test starts: appends the URL of every module the process loads from
// node_modules to the file MODULE_LOG names, with the process id (a start may build the bundle in a child process),
// and at exit whether Node's fetch implementation (undici, one of Node's own modules) was ever loaded.
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
  const undici = process.moduleLoadList.some((name) => name.includes('undici'));
  appendFileSync(file, `${process.pid} exit undici=${undici}\n`);
});
