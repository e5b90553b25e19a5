import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { bundling } from '../build.ts';
import { objectSpread } from '../src/object-spread.ts';

// The object spread the bundle gives tRPC in place of Babel's helper: a spread's result, whatever the sources hold.

const symbol = Symbol('s');

describe('objectSpread', () => {
  it('copies as a spread does: own enumerable keys and symbols, later sources winning, null and undefined skipped', () => {
    const inherited = Object.create({ fromPrototype: 1 }) as Record<string, unknown>;
    inherited.own = 2;
    Object.defineProperty(inherited, 'hidden', { value: 3, enumerable: false });
    const [first, second] = [
      { a: 1, b: 2 },
      { b: 3, [symbol]: 4 },
    ];
    const spread = objectSpread({}, first, null, second, undefined, inherited, 'xy');
    // A string spreads its characters by index.
    const expected = { ...first, ...second, ...inherited, ...{ ...'xy'.split('') } };
    expect(spread).toEqual(expected);
    expect(Reflect.ownKeys(spread)).toEqual(Reflect.ownKeys(expected));
    expect((spread as Record<symbol, unknown>)[symbol]).toBe(4);
  });

  it('defines an own __proto__ key as a property and never sets the prototype from it', () => {
    const parsed = JSON.parse('{"__proto__": {"admin": true}, "name": "x"}') as Record<string, unknown>;
    const spread = objectSpread({}, { before: 1 }, parsed) as Record<string, unknown>;
    expect(Object.getPrototypeOf(spread)).toBe(Object.prototype);
    expect(spread.admin).toBeUndefined();
    expect(Object.hasOwn(spread, '__proto__')).toBe(true);
    expect(spread).toEqual({ ...{ before: 1 }, ...parsed });
  });

  it('is what the bundled tRPC spreads with (build.ts replaces its helper)', async () => {
    // Bundled as build.ts bundles the server; written beside the package so that its npm imports resolve.
    const outfile = fileURLToPath(new URL(`../node_modules/.cache/gatehouse-test/spread-${process.pid}.mjs`, import.meta.url));
    await build({
      stdin: { contents: "export { initTRPC } from '@trpc/server';", resolveDir: import.meta.dirname, loader: 'ts' },
      outfile,
      ...bundling,
      logLevel: 'warning',
    });
    try {
      const bundled = (await import(pathToFileURL(outfile).href)) as typeof import('@trpc/server');
      const t = bundled.initTRPC.context<{ a: number }>().create();
      const procedure = t.procedure.use(({ ctx, next }) => next({ ctx: { b: ctx.a + 1 } })).query(({ ctx }) => ({ ...ctx }));
      const caller = t.createCallerFactory(t.router({ procedure }))({ a: 1 });
      expect(await caller.procedure()).toEqual({ a: 1, b: 2 });
      const text = await readFile(outfile, 'utf8');
      expect(text).not.toContain('function _objectSpread2');
      expect(text).toContain('function objectSpread(');
    } finally {
      await rm(outfile, { force: true });
    }
  });
});
