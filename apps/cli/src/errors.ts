import { GatehouseError } from '@gatehouse/sdk';
import { CommanderError } from 'commander';

/** A mistake in how the CLI was invoked or configured (missing credentials, bad flag values): exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

const oneLine = (text: string): string => text.replace(/\s*\n\s*/g, ' ').trim();

/**
 * The one place errors become output: a single `error: …` line on stderr and the exit code
 * (1 for API and runtime errors, 2 for usage errors, 0 for --help and --version).
 */
export function reportError(error: unknown, stderr: NodeJS.WritableStream = process.stderr, json = false): number {
  // Commander has already printed its own message (or the help text).
  if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
  const exitCode = error instanceof UsageError ? 2 : 1;
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
    return 2;
  }
  if (error instanceof GatehouseError) {
    // A detail that only repeats the message (a one-field refusal worded for people) is not printed twice.
    const extra = error.details?.filter((d) => d.message !== error.message) ?? [];
    const details = extra.length ? ` (${extra.map((d) => `${d.path}: ${d.message}`).join('; ')})` : '';
    stderr.write(`error: ${error.code}: ${oneLine(error.message + details)}\n`);
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  stderr.write(`error: ${oneLine(message)}\n`);
  if (process.env.GATEHOUSE_DEBUG && error instanceof Error && error.stack) stderr.write(`${error.stack}\n`);
  return 1;
}
