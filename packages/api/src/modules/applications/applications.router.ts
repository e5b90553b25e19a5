import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { ApplicationPageSchema, ListApplicationsInputSchema } from './applications.schema.ts';
import { deleteApplication, listApplications } from './applications.service.ts';
import { operatorProcedure } from './callers.ts';

const tags = ['Applications'];

/**
 * The operator's part of the applications namespace. The root router adds `create` (it mints the first key), `get` and
 * `update` (a secret key's) from application-setup, which sits above api-keys.
 */
export const applicationProcedures = {
  list: operatorProcedure
    .meta({ openapi: { method: 'GET', path: '/v1/applications', tags, summary: 'List applications (operator token)' } })
    .input(ListApplicationsInputSchema)
    .output(ApplicationPageSchema)
    .query(({ ctx, input }) => listApplications(ctx, input)),
  delete: operatorProcedure
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/applications/{id}',
        tags,
        summary: 'Delete an application and all its data (operator token)',
      },
    })
    .input(IdParamSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => deleteApplication(ctx, input.id)),
};
