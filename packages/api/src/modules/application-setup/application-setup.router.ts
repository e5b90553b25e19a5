import { operatorProcedure } from '../../trpc.ts';
import { CreateApplicationInputSchema } from '../applications/applications.schema.ts';
import { CreatedApplicationSchema } from './application-setup.schema.ts';
import { createApplication } from './application-setup.service.ts';

const tags = ['Applications'];

/** `applications.create` (mounted under applications by the root router). */
export const createApplicationProcedure = operatorProcedure
  .meta({
    idempotent: true,
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
  .mutation(({ ctx, input }) => createApplication(ctx, input));
