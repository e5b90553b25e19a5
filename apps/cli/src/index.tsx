import { reportError } from './errors.ts';
import { createProgram } from './program.ts';

const json = process.argv.includes('--json');
try {
  await createProgram({ json }).parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error, process.stderr, json);
}
