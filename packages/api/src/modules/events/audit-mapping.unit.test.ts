import { describe, expect, it } from 'vitest';
import { actAs, actingScope, SYSTEM_ACTOR, withActor, withRequest } from '../../lib/acting.ts';
import { AUDIT_MAPPING, auditValues, NOT_AUDITED } from './audit-mapping.ts';
import { EVENT_TYPES } from './events.schema.ts';

const ORG = '019ac1b2-0000-7000-8000-000000000a11';
const USER = '019ac1b2-0000-7000-8000-0000000005e1';
const membership = {
  organization_id: ORG,
  user_id: USER,
  email: 'ada@example.com',
  role: 'member',
  user_status: 'active',
  status: 'active',
  source: 'directory',
  created_at: '2026-11-28T09:30:00.000Z',
  updated_at: '2026-11-28T09:30:00.000Z',
} as const;

describe('the acting scope (lib/acting.ts)', () => {
  it('outside any scope the system acts, from no address', () => {
    expect(actingScope()).toEqual({ actor: SYSTEM_ACTOR, ip: null, userAgent: null });
    actAs({ type: 'user', id: USER });
    expect(actingScope().actor).toEqual(SYSTEM_ACTOR);
  });

  it('withActor names the actor across awaits; a nested scope keeps the origin it is not given', async () => {
    await withActor(
      { type: 'directory', id: 'dir-1' },
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        expect(actingScope()).toEqual({ actor: { type: 'directory', id: 'dir-1' }, ip: '203.0.113.7', userAgent: 'Okta SCIM' });
        await withActor({ type: 'portal', id: 'portal-1' }, async () => {
          await Promise.resolve();
          expect(actingScope()).toEqual({ actor: { type: 'portal', id: 'portal-1' }, ip: '203.0.113.7', userAgent: 'Okta SCIM' });
        });
        expect(actingScope().actor).toEqual({ type: 'directory', id: 'dir-1' });
      },
      { ip: '203.0.113.7', userAgent: 'Okta SCIM' },
    );
    expect(actingScope().actor).toEqual(SYSTEM_ACTOR);
  });

  it('a request scope starts as the system; actAs names the authenticated caller for that scope only', async () => {
    const a = withRequest({ ip: '192.0.2.1', userAgent: 'a' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      actAs({ type: 'api_key', id: 'key-a' });
      await new Promise((resolve) => setTimeout(resolve, 5));
      return actingScope();
    });
    const b = withRequest({ ip: '192.0.2.2', userAgent: 'b' }, async () => {
      expect(actingScope().actor).toEqual(SYSTEM_ACTOR);
      await new Promise((resolve) => setTimeout(resolve, 8));
      return actingScope();
    });
    expect(await a).toEqual({ actor: { type: 'api_key', id: 'key-a' }, ip: '192.0.2.1', userAgent: 'a' });
    expect(await b).toEqual({ actor: SYSTEM_ACTOR, ip: '192.0.2.2', userAgent: 'b' });
  });

  it('cuts the address and user agent to their columns', () => {
    withRequest({ ip: 'x'.repeat(100), userAgent: 'y'.repeat(1000) }, () => {
      expect(actingScope().ip).toHaveLength(64);
      expect(actingScope().userAgent).toHaveLength(512);
    });
  });
});

describe('audit columns (events/audit-mapping.ts)', () => {
  it('a directory adding a member: the directory acts, in the organization, on the user', () => {
    const values = withActor(
      { type: 'directory', id: 'dir-1' },
      () => auditValues('organization_membership.created', membership),
      {
        ip: '203.0.113.7',
        userAgent: 'Okta SCIM',
      },
    );
    expect(values).toEqual(['directory', 'dir-1', '203.0.113.7', 'Okta SCIM', ORG, 'user', USER]);
  });

  it('the default: the kind resource and data.id, the organization when the payload has one', () => {
    expect(auditValues('api_key.revoked', { id: 'k1', name: 'old' })).toEqual([
      'system',
      'gatehouse',
      null,
      null,
      null,
      'api_key',
      'k1',
    ]);
    const subscription = { id: 's1', organization_id: ORG } as never;
    expect(auditValues('subscription.updated', subscription).slice(4)).toEqual([ORG, 'subscription', 's1']);
  });

  it('a sign-in is the user’s act unless a caller was named', () => {
    const session = { id: 'sess-1', user_id: USER, aal: 1 };
    expect(withRequest({ ip: '192.0.2.1' }, () => auditValues('session.created', session)).slice(0, 3)).toEqual([
      'user',
      USER,
      '192.0.2.1',
    ]);
    expect(withActor({ type: 'api_key', id: 'k1' }, () => auditValues('session.created', session)).slice(0, 2)).toEqual([
      'api_key',
      'k1',
    ]);
  });

  it('every event kind has audit columns; mail is the one kind left out', () => {
    expect(NOT_AUDITED).toEqual(['message.created']);
    for (const kind of Object.keys(AUDIT_MAPPING)) expect(EVENT_TYPES).toContain(kind);
  });
});
