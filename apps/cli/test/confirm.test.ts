import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { confirm, mustConfirm } from '../src/confirm.ts';
import { UsageError } from '../src/errors.ts';

/** Answers the question with `typed` (or closes the input: end of input, Ctrl-D) and collects what was printed. */
async function answer(typed: string | null) {
  const input = new PassThrough();
  const output = new PassThrough();
  let printed = '';
  output.on('data', (chunk: Buffer) => {
    printed += chunk.toString();
  });
  const agreed = confirm('Remove it?', input, output);
  if (typed === null) input.end();
  else input.write(typed);
  return { agreed: await agreed, printed };
}

describe('confirmation', () => {
  it('asks on a terminal, not with --yes, and refuses without a terminal to ask on', () => {
    expect(mustConfirm(true, 'it signs the user out', { isTTY: false })).toBe(false);
    expect(mustConfirm(true, 'it signs the user out', { isTTY: true })).toBe(false);
    expect(mustConfirm(undefined, 'it signs the user out', { isTTY: true })).toBe(true);
    expect(() => mustConfirm(undefined, 'it signs the user out', { isTTY: false })).toThrow(UsageError);
    expect(() => mustConfirm(false, 'it signs the user out', {})).toThrow(
      'it signs the user out: pass --yes to confirm (standard input is not a terminal, so the CLI cannot ask)',
    );
  });

  it('goes ahead on y or yes only', async () => {
    expect(await answer('y\n')).toEqual({ agreed: true, printed: 'Remove it? [y/N] ' });
    expect((await answer('YES\n')).agreed).toBe(true);
    expect((await answer(' yes \n')).agreed).toBe(true);
    expect((await answer('\n')).agreed).toBe(false);
    expect((await answer('n\n')).agreed).toBe(false);
    expect((await answer('yep\n')).agreed).toBe(false);
    const ended = await answer(null);
    expect(ended.agreed).toBe(false);
    expect(ended.printed).toMatch(/^Remove it\? \[y\/N\] \r?\n$/);
  });
});
