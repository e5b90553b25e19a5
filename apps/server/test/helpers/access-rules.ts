import { unique } from './fixtures.ts';
import { ok, type TestApp } from './server.ts';

/** A host (in `groupId`, when given) with a name no other test uses. */
export const createHost = (on: TestApp, groupId?: string) =>
  ok(on.rest('POST', '/v1/os/hosts', { name: unique('host'), ...(groupId ? { host_group_id: groupId } : {}) }), 201);

/** An access rule: `effect` for a user or an organization on a host or a host group. */
export const rule = (
  on: TestApp,
  effect: 'allow' | 'deny',
  subject: ['user' | 'organization', string],
  target: ['host' | 'host_group', string],
) =>
  ok(
    on.rest('POST', '/v1/os/access-rules', {
      effect,
      subject_kind: subject[0],
      subject_id: subject[1],
      target_kind: target[0],
      target_id: target[1],
    }),
    201,
  );
