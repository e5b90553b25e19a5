import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import {
  PreviewTemplateInputSchema,
  PutTemplateInputSchema,
  RenderedTemplateSchema,
  TemplateCatalogEntrySchema,
  TemplateParamsSchema,
  TemplateSchema,
} from './templates.schema.ts';
import { getTemplate, previewTemplate, putTemplate, resetTemplate, templateCatalog } from './templates.service.ts';

const tags = ['Templates'];
const base = '/v1/applications/{id}/templates';

export const templatesRouter = router({
  catalog: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: `${base}/catalog`, tags, summary: 'The messages the service sends' } })
    .input(IdParamSchema)
    .output(z.array(TemplateCatalogEntrySchema))
    .query(({ ctx, input }) => templateCatalog(ctx, input.id)),
  get: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: `${base}/{key}`, tags, summary: 'A template as the application sends it' } })
    .input(TemplateParamsSchema)
    .output(TemplateSchema)
    .query(({ ctx, input }) => getTemplate(ctx, input)),
  put: secretKeyProcedure('settings:write')
    .meta({ openapi: { method: 'PUT', path: `${base}/{key}`, tags, summary: 'Override subject, body or delivery (Mustache)' } })
    .input(PutTemplateInputSchema)
    .output(TemplateSchema)
    .mutation(({ ctx, input }) => putTemplate(ctx, input)),
  reset: secretKeyProcedure('settings:write')
    .meta({ openapi: { method: 'DELETE', path: `${base}/{key}`, tags, summary: 'Restore the default template' } })
    .input(TemplateParamsSchema)
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => resetTemplate(ctx, input)),
  preview: secretKeyProcedure('settings:read')
    .meta({
      openapi: {
        method: 'POST',
        path: `${base}/{key}/preview`,
        tags,
        summary: 'Render a template with example or given variables',
      },
    })
    .input(PreviewTemplateInputSchema)
    .output(RenderedTemplateSchema)
    .mutation(({ ctx, input }) => previewTemplate(ctx, input)),
});
