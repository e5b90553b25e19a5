import { describe, expect, it } from 'vitest';
import { CHEAPER_NAME, withoutNeedlessNames } from '../build.ts';

// keepNames' `__name(fn, "x")` taken out where the language names the function "x" by itself (build.ts).

/** Runs a module body with the bundle's helper and answers what it returns. */
const run = (body: string): Record<string, { name: string }> =>
  new Function(`var __defProp=Object.defineProperty;${CHEAPER_NAME}${body}`)();

const CASES = [
  'const onError=__name(err=>err,"onError");',
  'let cb=__name(function(err,client){return client},"cb");',
  'var later;later=__name(async()=>1,"later");',
  'const o={hook:__name(()=>1,"hook"),"odd-key":__name(()=>2,"odd-key")};',
  'class C{static field=__name(()=>1,"field")}',
].join('');
const RETURN = 'return {onError,cb,later,hook:o.hook,odd:o["odd-key"],field:C.field};';

describe('withoutNeedlessNames', () => {
  it('takes the call out where the binding names the function, which then has the same name', () => {
    const out = withoutNeedlessNames(CASES);
    expect(out).not.toContain('__name(');
    const before = run(CASES + RETURN);
    const after = run(out + RETURN);
    for (const key of Object.keys(before)) expect(after[key]?.name, key).toBe(before[key]?.name);
    expect(after.odd?.name).toBe('odd-key');
  });

  it('keeps the columns: every removed character becomes a space, so the source map stays right', () => {
    const code = `{${CASES}}\n{${CASES}}`;
    const out = withoutNeedlessNames(code);
    expect(out.split('\n').map((line) => line.length)).toEqual(code.split('\n').map((line) => line.length));
    const stripped = (text: string) => text.replace(/__name\(|,"[\w-]+"\)| /g, '');
    expect(stripped(out)).toBe(stripped(code));
  });

  it('keeps the call for a renamed binding, a class, a named function, a computed key and anywhere else', () => {
    const kept = [
      'const onError2=__name(err=>err,"onError");',
      'const K=__name(class{},"K");',
      'const f=__name(function g(){},"f");',
      'const o={[k]:__name(()=>1,"k")};',
      'use(__name(()=>1,"arg"));',
    ].join('');
    expect(withoutNeedlessNames(kept)).toBe(kept);
  });
});
