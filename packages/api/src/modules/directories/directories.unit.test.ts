import { describe, expect, it } from 'vitest';
import { Hooks } from '../../lib/modules.ts';
import { organizationVerifiedDomainSql, verifiedDomainChecks } from './directories.hooks.ts';
import { ScimError } from './scim.errors.ts';
import { type AttributeResolver, filterToSql, parseFilter } from './scim.filter.ts';
import { normalizePatch } from './scim.shared.ts';

describe('organizationVerifiedDomainSql', () => {
  it('answers false while no module fills the registry, and the filling check otherwise', () => {
    expect(organizationVerifiedDomainSql(new Hooks([]))).toBe('false');
    const hooks = new Hooks([verifiedDomainChecks.entry('test', { sql: "v.domain = 'acme.com'" })]);
    expect(organizationVerifiedDomainSql(hooks)).toBe("(v.domain = 'acme.com')");
  });
});

const resolve: AttributeResolver = (path) =>
  path.toLowerCase() === 'username'
    ? { expr: 'u.name', kind: 'folded' }
    : path.toLowerCase() === 'emails'
      ? { array: "u.r -> 'emails'", defaultSub: 'value', element: (sub) => ({ expr: `e.v ->> '${sub}'`, kind: 'ci-text' }) }
      : null;

describe('filterToSql', () => {
  it('keeps every value a parameter', () => {
    const sql = filterToSql(parseFilter('userName eq "A\'; drop table users; --" or emails.value co "x"'), resolve);
    expect(sql.sql).not.toContain('drop');
    expect(sql.params).toEqual(["a'; drop table users; --", 'x']);
  });

  it('refuses unknown attributes and unparsable filters with invalidFilter', () => {
    for (const bad of ['nope eq "x"', 'userName eq', '(((']) {
      expect(() => filterToSql(parseFilter(bad), resolve)).toThrowError(ScimError);
    }
  });
});

describe('normalizePatch', () => {
  it('lower-cases op and reads string booleans where the attribute is a boolean', () => {
    expect(
      normalizePatch({
        Operations: [
          { op: 'Replace', path: 'active', value: 'False' },
          { op: 'Replace', value: { active: 'True', displayName: 'True' } },
        ],
      }),
    ).toEqual([
      { op: 'replace', path: 'active', value: false },
      { op: 'replace', value: { active: true, displayName: 'True' } },
    ]);
  });

  it('refuses unknown operations, a remove without path and a no-path value that is not an object', () => {
    expect(() => normalizePatch({ Operations: [{ op: 'move', path: 'x' }] })).toThrowError(ScimError);
    expect(() => normalizePatch({ Operations: [{ op: 'remove' }] })).toThrowError(ScimError);
    expect(() => normalizePatch({ Operations: [{ op: 'add', value: 5 }] })).toThrowError(ScimError);
    expect(() => normalizePatch({ Operations: [] })).toThrowError(ScimError);
  });
});
