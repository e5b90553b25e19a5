import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { operatorProcedure } from '../applications/callers.ts';
import {
  AddedOperatorSchema,
  AddOperatorInputSchema,
  ListOperatorsInputSchema,
  OperatorPageSchema,
  OperatorSchema,
  SetOperatorRoleInputSchema,
} from './operators.schema.ts';
import { addOperator, listOperators, removeOperator, setOperatorRole } from './operators.service.ts';

const tags = ['Operators'];

/** `operators.*`: the people who sign in to the console, and their roles (operator token, or an instance-wide owner). */
export const operatorsRouter = {
  add: operatorProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/operators',
        tags,
        summary: 'Add an operator, or give one a role (operator token); answers a one-time sign-in link to the console',
      },
      successStatus: 201,
    })
    .input(AddOperatorInputSchema)
    .output(AddedOperatorSchema)
    .mutation(({ ctx, input }) => addOperator(ctx, input)),
  list: operatorProcedure
    .meta({
      openapi: { method: 'GET', path: '/v1/operators', tags, summary: 'List operators with their roles (operator token)' },
    })
    .input(ListOperatorsInputSchema)
    .output(OperatorPageSchema)
    .query(({ ctx, input }) => listOperators(ctx, input)),
  setRole: operatorProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/v1/operators/{id}/roles',
        tags,
        summary: 'Set (or, with role null, remove) an operator\u2019s role for an application or for every application',
      },
    })
    .input(SetOperatorRoleInputSchema)
    .output(OperatorSchema)
    .mutation(({ ctx, input }) => setOperatorRole(ctx, input)),
  remove: operatorProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/operators/{id}',
        tags,
        summary: 'Remove an operator: their roles go, their console sessions are revoked (operator token)',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => removeOperator(ctx, input.id)),
};
