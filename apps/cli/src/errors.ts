import { GatehouseError } from '@gatehouse/sdk';
import { CommanderError } from 'commander';

/**
 * The exit codes, for scripts to branch on (listed by `gatehouse --help`). `no` is an answer, not a failure: the
 * command worked and the answer to its question is no (a denied check, a domain not verified yet).
 */
export const EXIT = { ok: 0, error: 1, usage: 2, no: 3 } as const;

export const EXIT_CODES_HELP = `
Exit codes:
  0  success (and, for a command that asks a question, the answer is yes)
  1  an API, network or runtime error
  2  a usage error: a bad flag or argument, missing credentials, an unreadable config file
  3  the answer is no: \`authz check\` and \`access check\` denied, \`domains verify\` not verified yet`;

/** A mistake in how the CLI was invoked or configured (missing credentials, bad flag values): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/** Commander's own messages start with `error: `; the line printed here adds its own. */
const commanderMessage = (error: CommanderError): string => error.message.replace(/^error:\s*/, '');

/**
 * What a failure tells beyond its message: each detail as `path: reason`, or only its path when the reason repeats the
 * message (a one-field refusal worded for people), so that the field is always named.
 */
function detailsText(error: GatehouseError): string {
  const parts = (error.details ?? []).map((d) =>
    d.message === error.message ? d.path : d.path ? `${d.path}: ${d.message}` : d.message,
  );
  const shown = parts.filter(Boolean);
  return shown.length ? ` (${shown.join('; ')})` : '';
}

/**
 * The one place errors become output: a single `error: …` line on stderr (JSON under `--json`) and the exit code
 * (`EXIT`). Commander has already printed its message unless `--json` silenced it (see createProgram).
 */
export function reportError(error: unknown, stderr: NodeJS.WritableStream = process.stderr, json = false): number {
  if (error instanceof CommanderError) {
    // --help and --version end with exit code 0; a help text printed because a subcommand is missing is usage.
    if (error.exitCode === 0) return EXIT.ok;
    if (json && error.code !== 'commander.help') {
      stderr.write(`${JSON.stringify({ error: { code: 'usage_error', message: oneLine(commanderMessage(error)) } })}\n`);
    }
    return EXIT.usage;
  }
  const exitCode = error instanceof UsageError ? EXIT.usage : EXIT.error;
  if (json) {
    // Under --json a failure is JSON too (on stderr; stdout stays for results), with the API's fields when it has them.
    const body =
      error instanceof GatehouseError
        ? { code: error.code, status: error.status, message: error.message, details: error.details, request_id: error.requestId }
        : {
            code: error instanceof UsageError ? 'usage_error' : 'error',
            message: error instanceof Error ? error.message : String(error),
          };
    stderr.write(`${JSON.stringify({ error: body })}\n`);
    return exitCode;
  }
  if (error instanceof UsageError) {
    stderr.write(`error: ${oneLine(error.message)}\n`);
    return exitCode;
  }
  if (error instanceof GatehouseError) {
    stderr.write(`error: ${error.code}: ${oneLine(error.message + detailsText(error))}\n`);
    return exitCode;
  }
  const message = error instanceof Error ? error.message : String(error);
  stderr.write(`error: ${oneLine(message)}\n`);
  if (process.env.GATEHOUSE_DEBUG && error instanceof Error && error.stack) stderr.write(`${error.stack}\n`);
  return exitCode;
}
