import { z } from 'zod';
import { listQuerySchema, type PageQuery, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { MessageEntity } from './message.entity.ts';

export const MessageSchema = z
  .object({
    id: z.uuid(),
    template_key: text(),
    channel: z.enum(['email', 'sms']),
    to: text(),
    subject: text().nullable(),
    body: text().meta({ description: 'Text body; links only for development applications' }),
    status: z.enum(['queued', 'sent', 'failed', 'not_delivered']).meta({
      description:
        'queued: waiting to be sent (or retried); sent; failed: every attempt failed; not_delivered: handed to you as message.created',
    }),
    created_at: z.iso.datetime(),
  })
  .meta({ id: 'Message' });

async function listMessages(ctx: TenantContext, input: PageQuery) {
  const [rows, total] = await ctx.em.findAndCount(
    MessageEntity,
    // Suppressed rows (a magic link to an address that cannot sign in) only keep timings equal: never listed.
    { application: ctx.application.id, status: { $ne: 'suppressed' } },
    { orderBy: { createdAt: 'desc', id: 'desc' }, limit: input.limit, offset: input.offset },
  );
  return {
    messages: rows.map((m) => ({
      id: m.id,
      template_key: m.templateKey,
      channel: m.channel as 'email',
      to: m.to,
      subject: m.subject ?? null,
      body: m.body,
      status: m.status as 'sent',
      created_at: m.createdAt.toISOString(),
    })),
    total,
    limit: input.limit,
    offset: input.offset,
  };
}

export const messagesRouter = router({
  list: secretKeyProcedure('settings:read')
    .meta({ openapi: { method: 'GET', path: '/v1/messages', tags: ['Templates'], summary: 'The message log, newest first' } })
    .input(listQuerySchema({}))
    .output(pageOf('messages', MessageSchema).meta({ id: 'MessagePage' }))
    .query(({ ctx, input }) => listMessages(ctx, input)),
});
