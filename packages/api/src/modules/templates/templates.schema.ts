import { z } from 'zod';

export const TemplateCatalogEntrySchema = z
  .object({
    key: z.string(),
    label: z.string(),
    description: z.string(),
    channel: z.enum(['email', 'sms']),
    has_subject: z.boolean(),
    delivered: z.boolean(),
    variables: z.array(z.object({ name: z.string(), description: z.string(), example: z.string() })),
  })
  .meta({ id: 'TemplateCatalogEntry' });

export const TemplateSchema = z
  .object({
    key: z.string(),
    channel: z.enum(['email', 'sms']),
    subject: z.string().nullable(),
    body: z.string(),
    delivered: z.boolean(),
    customized: z.boolean().meta({ description: 'Whether the application overrides the default' }),
    updated_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Template' });

const KeyParam = z.string().regex(/^[a-z][a-z0-9_]{0,63}$/);
export const TemplateParamsSchema = z.strictObject({ id: z.uuid(), key: KeyParam });

export const PutTemplateInputSchema = TemplateParamsSchema.extend({
  subject: z.string().min(1).max(998).nullable().optional().meta({ description: 'null restores the default subject' }),
  body: z.string().min(1).max(100_000).nullable().optional().meta({ description: 'null restores the default body' }),
  delivered: z.boolean().nullable().optional().meta({ description: 'false: emit message.created instead of sending' }),
}).strict();

export const PreviewTemplateInputSchema = TemplateParamsSchema.extend({
  subject: z.string().max(998).optional(),
  body: z.string().max(100_000).optional(),
  variables: z.record(z.string(), z.string().max(2048)).optional().meta({ description: 'Defaults to the examples' }),
}).strict();

export const RenderedTemplateSchema = z
  .object({ subject: z.string().nullable(), html: z.string(), text: z.string() })
  .meta({ id: 'RenderedTemplate' });

/** The `data` of `message.created`: a message the developer delivers, with its variables (links included). */
export const MessageCreatedEventSchema = z.object({
  id: z.uuid(),
  template_key: z.string(),
  channel: z.enum(['email', 'sms']),
  to: z.string(),
  subject: z.string().nullable(),
  html: z.string(),
  text: z.string(),
  variables: z.record(z.string(), z.string()),
});
