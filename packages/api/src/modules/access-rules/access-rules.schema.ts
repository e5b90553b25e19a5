import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

export const EFFECTS = ['allow', 'deny'] as const;
export const SUBJECT_KINDS = ['user', 'organization'] as const;
export const TARGET_KINDS = ['host', 'host_group'] as const;

const NameSchema = text().trim().min(1).max(200);

export const HostGroupSchema = z.object({ id: z.uuid(), name: text(), created_at: z.iso.datetime() }).meta({ id: 'HostGroup' });
export type HostGroupRecord = z.infer<typeof HostGroupSchema>;

export const HostSchema = z
  .object({ id: z.uuid(), name: text(), host_group_id: z.uuid().nullable(), created_at: z.iso.datetime() })
  .meta({ id: 'Host' });
export type HostRecord = z.infer<typeof HostSchema>;

export const CreateHostGroupInputSchema = z.strictObject({ name: NameSchema });
export const CreateHostInputSchema = z.strictObject({
  name: NameSchema,
  host_group_id: z.uuid().optional().meta({ description: 'The group the host belongs to' }),
});

/** S19: exactly the seed's fields. */
export const AccessRuleSchema = z
  .object({
    id: z.uuid(),
    effect: z.enum(EFFECTS),
    subject_kind: z.enum(SUBJECT_KINDS),
    subject_id: z.uuid(),
    target_kind: z.enum(TARGET_KINDS),
    target_id: z.uuid(),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'AccessRule' });
export type AccessRuleRecord = z.infer<typeof AccessRuleSchema>;

export const CreateAccessRuleInputSchema = z.strictObject({
  effect: z.enum(EFFECTS),
  subject_kind: z.enum(SUBJECT_KINDS),
  subject_id: z.uuid().meta({ description: 'A user id, or an organization id (every member)' }),
  target_kind: z.enum(TARGET_KINDS),
  target_id: z.uuid().meta({ description: 'A host id, or a host group id (every host in it)' }),
});

export const AccessCheckInputSchema = z.strictObject({ user_id: z.uuid(), host_id: z.uuid() });
export const AccessCheckSchema = z
  .object({
    allowed: z.boolean(),
    rule_id: z.uuid().nullable().meta({ description: 'The deciding rule; null when no rule matched (denied)' }),
  })
  .meta({ id: 'AccessCheck' });
export type AccessCheckRecord = z.infer<typeof AccessCheckSchema>;
