import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { operatorProcedure, secretKeyProcedure } from '../../trpc.ts';
import {
  ApplicationPageSchema,
  ApplicationSchema,
  ListApplicationsInputSchema,
  UpdateApplicationInputSchema,
} from './applications.schema.ts';
import { deleteApplication, getApplication, listApplications, updateApplication } from './applications.service.ts';

const tags = ['Applications'];

/** The applications namespace; the root router adds `create` from application-setup (it mints the first key). */
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
  get: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: '/v1/applications/{id}', tags, summary: 'Get the application' } })
    .input(IdParamSchema)
    .output(ApplicationSchema)
    .query(({ ctx, input }) => getApplication(ctx, input.id)),
  update: secretKeyProcedure('settings:write')
    .meta({
      openapi: { method: 'PATCH', path: '/v1/applications/{id}', tags, summary: 'Update name, allowed origins or settings' },
    })
    .input(UpdateApplicationInputSchema)
    .output(ApplicationSchema)
    .mutation(({ ctx, input }) => updateApplication(ctx, input)),
};
