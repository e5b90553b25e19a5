import { describe, expect, it } from 'vitest';
import { slugify } from './organizations.service.ts';

describe('slugify', () => {
  it('folds accents, lower-cases and hyphenates', () => {
    expect(slugify('Acme Inc.')).toBe('acme-inc');
    expect(slugify('Ünïcode  Café & Co!')).toBe('unicode-cafe-co');
    expect(slugify('  --Hello__World--  ')).toBe('hello-world');
  });

  it('never answers an empty or over-long slug', () => {
    expect(slugify('日本語')).toBe('org');
    expect(slugify('!!!')).toBe('org');
    const long = slugify(`${'a'.repeat(99)} b`);
    expect(long.length).toBeLessThanOrEqual(100);
    expect(long).toMatch(/^[a-z0-9]+(?:-[a-z0-9]+)*$/);
  });
});
