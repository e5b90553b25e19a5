import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { operatorProcedure, router, secretKeyProcedure } from '../../trpc.ts';
import {
  ApplicationPageSchema,
  ApplicationSchema,
  CreateApplicationInputSchema,
  CreatedApplicationSchema,
  ListApplicationsInputSchema,
  UpdateApplicationInputSchema,
} from './applications.schema.ts';
import {
  createApplication,
  deleteApplication,
  getApplication,
  listApplications,
  updateApplication,
} from './applications.service.ts';

const tags = ['Applications'];

export const applicationsRouter = router({
  create: operatorProcedure
    .meta({
      successStatus: 201,
      openapi: {
        method: 'POST',
        path: '/v1/applications',
        tags,
        summary: 'Create an application (operator token)',
        description: 'Answers the application and its first secret key; the secret is shown once.',
      },
    })
    .input(CreateApplicationInputSchema)
    .output(CreatedApplicationSchema)
    .mutation(({ ctx, input }) => createApplication(ctx, input)),
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
});
