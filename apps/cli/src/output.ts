import type { Command } from 'commander';
import { globalOptions } from './context.ts';
import { EXIT } from './errors.ts';
import { renderPlain, type View } from './ui/view.ts';

/** `json`: the raw result; `plain`: tab-separated text; `rich`: ink tables and a spinner. */
export type OutputMode = 'json' | 'plain' | 'rich';

const isSet = (value: string | undefined): boolean =>
  value !== undefined && value !== '' && value !== '0' && value.toLowerCase() !== 'false';

/** Anything but an interactive terminal gets plain text: pipes, files, `TERM=dumb`, CI. */
export function detectMode(json: boolean, stdout: { isTTY?: boolean }, env: NodeJS.ProcessEnv): OutputMode {
  if (json) return 'json';
  if (!stdout.isTTY || env.TERM === 'dumb' || isSet(env.CI)) return 'plain';
  return 'rich';
}

export const outputMode = (command: Command): OutputMode =>
  detectMode(Boolean(globalOptions(command).json), process.stdout, process.env);

/**
 * Runs one call and shows its result the way the mode asks. `--json` prints exactly what the API returned (the data,
 * pretty-printed); the other modes show `view(result)`. Errors propagate to the top-level handler. Answers the result
 * (for an exit code that depends on it).
 */
export async function present<T>(command: Command, label: string, call: () => Promise<T>, view: (result: T) => View): Promise<T> {
  const mode = outputMode(command);
  if (mode === 'rich') {
    // ink (and its layout engine) loads only for a terminal: scripts and CI do not pay for it.
    const { presentRich } = await import('./ui/present.tsx');
    return presentRich(label, call, view);
  }
  const result = await call();
  if (mode === 'json') {
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return result;
  }
  const text = renderPlain(view(result));
  process.stdout.write(text.stdout);
  if (text.stderr) process.stderr.write(text.stderr);
  return result;
}

/** A command that asks a question exits with `EXIT.no` when the answer is no (output is the same either way). */
export function exitNoUnless(yes: boolean): void {
  if (!yes) process.exitCode = EXIT.no;
}
