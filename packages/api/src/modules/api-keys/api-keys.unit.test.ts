import { describe, expect, it } from 'vitest';
import { grants } from './api-keys.service.ts';

describe('scope grants', () => {
  it('* grants everything; write implies read; nothing else is implied', () => {
    expect(grants(['*'], 'users:write')).toBe(true);
    expect(grants(['users:write'], 'users:read')).toBe(true);
    expect(grants(['users:read'], 'users:write')).toBe(false);
    expect(grants(['users:write'], 'organizations:read')).toBe(false);
    expect(grants(['stats:read'], 'stats:read')).toBe(true);
    expect(grants([], 'users:read')).toBe(false);
  });
});
