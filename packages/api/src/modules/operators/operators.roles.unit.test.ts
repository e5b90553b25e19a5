import { describe, expect, it } from 'vitest';
import { SCOPES } from '../../lib/scopes.ts';
import { grants } from '../api-keys/api-keys.service.ts';
import { ROLE_SCOPES, strongestRole } from './operators.roles.ts';

const allowed = (role: keyof typeof ROLE_SCOPES) => SCOPES.filter((scope) => scope !== '*' && grants(ROLE_SCOPES[role], scope));

describe('operator roles as scopes', () => {
  it('viewer reads everything and writes nothing; support adds users:write; admin and owner hold every scope', () => {
    const reads = SCOPES.filter((scope) => scope.endsWith(':read'));
    expect(allowed('viewer')).toEqual(reads);
    expect(allowed('support')).toEqual(SCOPES.filter((scope) => scope.endsWith(':read') || scope === 'users:write'));
    expect(allowed('admin')).toEqual(SCOPES.filter((scope) => scope !== '*'));
    expect(allowed('owner')).toEqual(SCOPES.filter((scope) => scope !== '*'));
    expect(grants(ROLE_SCOPES.support, 'settings:write')).toBe(false);
    expect(grants(ROLE_SCOPES.support, 'api_keys:write')).toBe(false);
  });

  it('the strongest of an application role and an instance-wide role counts', () => {
    expect(strongestRole(['viewer', 'admin'])).toBe('admin');
    expect(strongestRole(['owner', 'support'])).toBe('owner');
    expect(strongestRole([])).toBeUndefined();
    expect(strongestRole(['root'])).toBeUndefined();
  });
});
