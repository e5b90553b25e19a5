import { z } from 'zod';
import { text } from '../../lib/schemas.ts';

export const TemplateCatalogEntrySchema = z
  .object({
    key: text(),
    label: text(),
    description: text(),
    channel: z.enum(['email', 'sms']),
    has_subject: z.boolean(),
    delivered: z.boolean(),
    variables: z.array(z.object({ name: text(), description: text(), example: text() })),
  })
  .meta({ id: 'TemplateCatalogEntry' });

export const TemplateSchema = z
  .object({
    key: text(),
    channel: z.enum(['email', 'sms']),
    subject: text().nullable(),
    body: text(),
    delivered: z.boolean(),
    customized: z.boolean().meta({ description: 'Whether the application overrides the default' }),
    updated_at: z.iso.datetime().nullable(),
  })
  .meta({ id: 'Template' });

const KeyParam = text().regex(/^[a-z][a-z0-9_]{0,63}$/);
export const TemplateParamsSchema = z.strictObject({ id: z.uuid(), key: KeyParam });

export const PutTemplateInputSchema = TemplateParamsSchema.extend({
  subject: text().min(1).max(998).nullable().optional().meta({ description: 'null restores the default subject' }),
  body: text().min(1).max(100_000).nullable().optional().meta({ description: 'null restores the default body' }),
  delivered: z.boolean().nullable().optional().meta({ description: 'false: emit message.created instead of sending' }),
}).strict();

export const PreviewTemplateInputSchema = TemplateParamsSchema.extend({
  subject: text().max(998).optional(),
  body: text().max(100_000).optional(),
  variables: z.record(text(), text().max(2048)).optional().meta({ description: 'Defaults to the examples' }),
}).strict();

export const TestTemplateInputSchema = TemplateParamsSchema.extend({
  to: text().trim().max(320).pipe(z.email()).meta({ description: 'Where the test message goes', example: 'you@example.com' }),
}).strict();

export const TemplateTestSchema = z
  .object({
    message_id: z.uuid().meta({ description: 'The message in the message log (GET /v1/messages)' }),
    to: text(),
    status: z.enum(['queued', 'not_delivered']).meta({
      description: 'queued: the mail is on its way; not_delivered: the template is not delivered, so message.created was emitted',
    }),
  })
  .meta({ id: 'TemplateTest' });

export const RenderedTemplateSchema = z
  .object({ subject: text().nullable(), html: text(), text: text() })
  .meta({ id: 'RenderedTemplate' });

/** The `data` of `message.created`: a message the developer delivers, with its variables (links included). */
export const MessageCreatedEventSchema = z.object({
  id: z.uuid(),
  template_key: text(),
  channel: z.enum(['email', 'sms']),
  to: text(),
  subject: text().nullable(),
  html: text(),
  text: text(),
  variables: z.record(text(), text()),
});
