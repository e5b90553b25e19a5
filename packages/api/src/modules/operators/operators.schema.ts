import { z } from 'zod';
import { listQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';
import { OPERATOR_ROLES } from './operators.roles.ts';

export const OperatorRoleNameSchema = z.enum(OPERATOR_ROLES).meta({
  id: 'OperatorRoleName',
  description:
    'viewer: read everything; support: viewer and users:write; admin: everything in the application; owner: admin and deleting it',
});

const ApplicationScopeSchema = z.uuid().nullable().meta({ description: 'The application, or null for every application' });

export const OperatorRoleSchema = z
  .object({ application_id: ApplicationScopeSchema, role: OperatorRoleNameSchema })
  .meta({ id: 'OperatorRole' });

export const OperatorSchema = z
  .object({
    id: z.uuid(),
    user_id: z.uuid().meta({ description: 'The operator\u2019s user in the console application' }),
    email: text(),
    roles: z.array(OperatorRoleSchema),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Operator' });
export type OperatorRecord = z.infer<typeof OperatorSchema>;

export const AddOperatorInputSchema = z.strictObject({
  email: text().trim().max(320).pipe(z.email()),
  role: OperatorRoleNameSchema,
  application_id: ApplicationScopeSchema.default(null),
});

export const AddedOperatorSchema = z
  .object({
    operator: OperatorSchema,
    sign_in_link: z
      .object({
        url: text().meta({ description: 'Opens the console signed in as the operator: once, before expires_at' }),
        expires_at: z.iso.datetime(),
      })
      .meta({ id: 'OperatorSignInLink' }),
  })
  .meta({ id: 'AddedOperator' });

export const SetOperatorRoleInputSchema = z.strictObject({
  id: z.uuid(),
  application_id: ApplicationScopeSchema.default(null),
  role: OperatorRoleNameSchema.nullable().meta({ description: 'null removes the operator\u2019s role there' }),
});

export const ListOperatorsInputSchema = listQuerySchema({});
export const OperatorPageSchema = pageOf('operators', OperatorSchema).meta({ id: 'OperatorPage' });
