// Loaded with `--import` into a server that a test starts: appends the URL of every module the process loads from
// node_modules to the file MODULE_LOG names, with the process id (a start may build the bundle in a child process).
import { appendFileSync } from 'node:fs';
import { registerHooks } from 'node:module';

const file = process.env.MODULE_LOG;
registerHooks({
  load(url, context, next) {
    if (file && url.includes('/node_modules/')) appendFileSync(file, `${process.pid} ${url}\n`);
    return next(url, context);
  },
});
