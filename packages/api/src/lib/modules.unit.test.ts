import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { composeModules, defineModule, Registry } from './modules.ts';

const steps = new Registry<(n: number) => number>('test step');
const single = new Registry<string>('test source', { single: true });

describe('composeModules', () => {
  it('composes each registry in the order the modules are listed', () => {
    const a = defineModule({ name: 'a', hooks: [steps.entry('double', (n) => 2 * n), single.entry('a', 'from a')] });
    const b = defineModule({ name: 'b', hooks: [steps.entry('increment', (n) => n + 1)] });
    const { hooks } = composeModules([a, b]);
    expect(hooks.get(steps).map((step) => step(3))).toEqual([6, 4]);
    expect(hooks.get(single)).toEqual(['from a']);
    expect(hooks.get(new Registry<string>('unfilled'))).toEqual([]);
  });

  it('refuses a name declared twice in one registry, across modules', () => {
    const a = defineModule({ name: 'a', hooks: [steps.entry('sessions', (n) => n)] });
    const b = defineModule({ name: 'b', hooks: [steps.entry('sessions', (n) => n + 1)] });
    expect(() => composeModules([a, b])).toThrow('The test step sessions is declared twice');
  });

  it('refuses a second entry in a registry that takes one', () => {
    const a = defineModule({ name: 'a', hooks: [single.entry('a', 'x')] });
    const b = defineModule({ name: 'b', hooks: [single.entry('b', 'y')] });
    expect(() => composeModules([a, b])).toThrow('A second test source is declared (b)');
  });

  it('refuses a module, an OpenAPI tag or a procedure declared twice', () => {
    const tag = { name: 'Things', description: 'Things.' };
    expect(() => composeModules([defineModule({ name: 'a' }), defineModule({ name: 'a' })])).toThrow(
      'The module a is listed twice',
    );
    expect(() => composeModules([defineModule({ name: 'a', tag }), defineModule({ name: 'b', tag })])).toThrow(
      'The OpenAPI tag Things is declared twice',
    );
    const leaf = { _def: {} } as never;
    const twice = [
      defineModule({ name: 'a', procedures: { users: { list: leaf } } }),
      defineModule({ name: 'b', procedures: { users: { list: leaf } } }),
    ];
    expect(() => composeModules(twice)).toThrow('The procedure users.list is declared twice');
  });

  it('composes the events every module declares, and refuses a kind declared twice', () => {
    const Created = z.object({ id: z.uuid() });
    const a = defineModule({ name: 'a', events: { 'thing.created': Created } });
    const b = defineModule({ name: 'b', events: { 'thing.deleted': Created } });
    expect(Object.keys(composeModules([a, b]).events)).toEqual(['thing.created', 'thing.deleted']);
    const again = defineModule({ name: 'c', events: { 'thing.created': z.object({}) } });
    expect(() => composeModules([a, again])).toThrow('The event thing.created is declared twice');
  });

  it('merges the namespaces several modules share', () => {
    const [list, revoke, factors] = [{ _def: { n: 1 } }, { _def: { n: 2 } }, { _def: { n: 3 } }] as never[];
    const composed = composeModules([
      defineModule({ name: 'users', procedures: { users: { list } } }),
      defineModule({ name: 'sessions', procedures: { users: { revoke } } }),
      defineModule({ name: 'factors', procedures: { users: { factors } } }),
    ]);
    expect(composed.procedures).toEqual({ users: { list, revoke, factors } });
  });
});
