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
  TemplateTestSchema,
  TestTemplateInputSchema,
} from './templates.schema.ts';
import { getTemplate, previewTemplate, putTemplate, resetTemplate, templateCatalog, testTemplate } from './templates.service.ts';

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
  test: secretKeyProcedure('settings:write')
    .meta({
      rateLimited: true,
      openapi: {
        method: 'POST',
        path: `${base}/{key}/test`,
        tags,
        summary: 'Send the template, as saved, to one address with the example variables',
        description:
          'The message is sent as the application sends it (a template that is not delivered emits `message.created` ' +
          'instead) and is in the message log. At most 10 per application per minute: 429 `rate_limited` beyond.',
      },
    })
    .input(TestTemplateInputSchema)
    .output(TemplateTestSchema)
    .mutation(({ ctx, input }) => testTemplate(ctx, input)),
});
