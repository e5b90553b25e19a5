import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  ApplicationSchema,
  CreateApplicationInputSchema,
  UpdateApplicationInputSchema,
} from '../applications/applications.schema.ts';
import { getApplication, updateApplication } from '../applications/applications.service.ts';
import { operatorProcedure } from '../applications/callers.ts';
import { LogoSchema, PutLogoInputSchema } from '../applications/logo.schema.ts';
import { deleteLogo, putLogo } from '../applications/logo.service.ts';
import { EventPageSchema, ListEventsInputSchema } from '../events/events.schema.ts';
import { listEvents } from '../events/events.service.ts';
import { CreatedApplicationSchema } from './application-setup.schema.ts';
import { createApplication } from './application-setup.service.ts';

/*
 * The procedures of applications and events that a secret key calls live here, above api-keys (the secret key's
 * module), which records its own events and so sits above both; the root router mounts them in their namespaces.
 */

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

/** `applications.get` and `applications.update`: the application of the secret key. */
export const keyApplicationProcedures = {
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
  /** The logo we serve for the hosted pages (`settings.branding.logo_url` points at it). */
  branding: {
    setLogo: secretKeyProcedure('settings:write')
      .meta({
        idempotent: true,
        openapi: {
          method: 'PUT',
          path: '/v1/applications/{id}/branding/logo',
          tags,
          summary: 'Upload the logo (PNG, JPEG, WebP or GIF, at most 256 KiB)',
          description:
            'Stores the image and sets settings.branding.logo_url to where it is served ({base}/a/{id}/logo?v=…). ' +
            'The bytes must be the declared type (SVG is refused); 422 validation_failed at `data` otherwise.',
        },
      })
      .input(PutLogoInputSchema)
      .output(LogoSchema)
      .mutation(({ ctx, input }) => putLogo(ctx, input)),
    removeLogo: secretKeyProcedure('settings:write')
      .meta({
        openapi: {
          method: 'DELETE',
          path: '/v1/applications/{id}/branding/logo',
          tags,
          summary: 'Remove the logo (uploaded or linked)',
          description: 'Sets settings.branding.logo_url to null; 404 when the application has no logo.',
        },
      })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => deleteLogo(ctx, input.id)),
  },
};

/** The event log (`events`). */
export const eventsRouter = router({
  list: secretKeyProcedure('webhooks:read')
    .meta({ openapi: { method: 'GET', path: '/v1/events', tags: ['Events'], summary: 'List events, newest first' } })
    .input(ListEventsInputSchema)
    .output(EventPageSchema)
    .query(({ ctx, input }) => listEvents(ctx, input)),
});
