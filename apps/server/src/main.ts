/**
 * The entry point (`npm start`, `npm run migrate`; `node apps/server/src/main.ts [migrate]`). It turns on Node's compile
 * cache before anything else loads, as the CLI does for itself (apps/cli/bin/gatehouse.js), then runs the command line
 * (cli.ts). The cache (under the system's temporary directory, or `NODE_COMPILE_CACHE`) keeps each module's
 * type-stripped source and V8's compiled code, keyed by Node's version and each file's content (an edited file is
 * compiled again): a restart neither strips types nor compiles its two thousand modules from scratch. Where the
 * directory cannot be written, Node carries on without it.
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./cli.ts');
