import { describe, expect, it } from 'vitest';
import { purgeSteps } from './lib/housekeeping.ts';
import { mergeSteps } from './modules/users/users.merge.ts';
import { service } from './modules.ts';
import { appRouter } from './router.ts';
import type { Meta } from './trpc.ts';

describe('the module list', () => {
  it('composes: every registry entry, procedure and tag declared once', () => {
    // Composing throws on anything declared twice; these spot-check that the declarations reached the registries.
    expect(service.hooks.get(mergeSteps)).toHaveLength(8);
    expect(service.hooks.get(purgeSteps).length).toBeGreaterThanOrEqual(15);
  });

  it('declares the OpenAPI tag of every procedure', () => {
    const declared = new Set(service.tags.map((tag) => tag.name));
    const used = new Set(
      // The flattened procedures, as openapi.ts walks them.
      (Object.values(appRouter._def.procedures) as unknown as Array<{ _def: { meta?: Meta } }>).flatMap(
        (procedure) => procedure._def.meta?.openapi?.tags ?? [],
      ),
    );
    expect([...used].filter((tag) => !declared.has(tag))).toEqual([]);
    expect([...declared].filter((tag) => !used.has(tag))).toEqual([]);
  });

  it('lists every table once', () => {
    const names = service.entities.map((entity) => (entity as { meta: { className: string } }).meta.className);
    expect(new Set(names).size).toBe(names.length);
  });
});
