import { createInterface } from 'node:readline/promises';
import { UsageError } from './errors.ts';

/**
 * Whether a command that cannot be undone must ask first: not with `--yes`; on a terminal, yes; without one (a script,
 * a pipe, CI) nobody can answer, so the command refuses and asks for `--yes` instead of hanging or going ahead.
 */
export function mustConfirm(yes: boolean | undefined, consequence: string, input: { isTTY?: boolean } = process.stdin) {
  if (yes) return false;
  if (!input.isTTY) {
    throw new UsageError(`${consequence}: pass --yes to confirm (standard input is not a terminal, so the CLI cannot ask)`);
  }
  return true;
}

/**
 * Asks a yes/no question on stderr (stdout stays for the result). Only `y` or `yes` agrees; Enter, anything else,
 * end of input (Ctrl-D) and Ctrl-C decline.
 */
export async function confirm(
  question: string,
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Promise<boolean> {
  return /^y(es)?$/i.test(await ask(`${question} [y/N] `, input, output));
}

/** Asks for a line of text on stderr; end of input or Ctrl-C answers empty. */
export async function ask(
  question: string,
  input: NodeJS.ReadableStream = process.stdin,
  output: NodeJS.WritableStream = process.stderr,
): Promise<string> {
  const terminal = createInterface({ input, output });
  const ended = new AbortController();
  terminal.on('SIGINT', () => ended.abort());
  terminal.on('close', () => ended.abort());
  try {
    return (await terminal.question(question, { signal: ended.signal })).trim();
  } catch (error) {
    if ((error as Error).name !== 'AbortError') throw error;
    return '';
  } finally {
    terminal.close();
  }
}
