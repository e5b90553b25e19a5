import { reportError } from './errors.ts';
import { createProgram } from './program.ts';

try {
  await createProgram().parseAsync(process.argv);
} catch (error) {
  process.exitCode = reportError(error, process.stderr, process.argv.includes('--json'));
}
