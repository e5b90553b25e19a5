import Mustache from 'mustache';
import type { Services } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError, errorMessage, notFound } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { ownApplication } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { recordEvent } from '../events/events.service.ts';
import { queueMail } from '../messages/mail-outbox.ts';
import { CATALOG, type CatalogEntry, catalogEntry } from './catalog.ts';
import { type TemplateOverride, TemplateOverrideEntity } from './template-override.entity.ts';

const catalogOrThrow = (key: string): CatalogEntry => {
  const entry = catalogEntry(key);
  if (!entry) throw notFound('Template');
  return entry;
};

export const templateCatalog = (ctx: TenantContext, applicationId: string) => {
  ownApplication(ctx, applicationId);
  return CATALOG.map(({ subject: _s, body: _b, ...entry }) => entry);
};

interface Effective {
  entry: CatalogEntry;
  subject: string | null;
  body: string;
  delivered: boolean;
  override: TemplateOverride | null;
}

async function effective(em: EntityManager, applicationId: string, key: string): Promise<Effective> {
  const entry = catalogOrThrow(key);
  const override = await em.findOne(TemplateOverrideEntity, { application: applicationId, key });
  return {
    entry,
    subject: entry.has_subject ? (override?.subject ?? entry.subject) : null,
    body: override?.body ?? entry.body,
    delivered: override?.delivered ?? entry.delivered,
    override,
  };
}

const toTemplate = (t: Effective) => ({
  key: t.entry.key,
  channel: t.entry.channel,
  subject: t.subject,
  body: t.body,
  delivered: t.delivered,
  customized: t.override !== null,
  updated_at: t.override?.updatedAt.toISOString() ?? null,
});

/** A template that does not parse is a 422 at write time, never a failure at send time. */
function checkSyntax(field: string, template: string | null | undefined) {
  if (!template) return;
  try {
    Mustache.parse(template);
  } catch (error) {
    throw new AppError('validation_failed', 'The template does not parse', [{ path: field, message: errorMessage(error) }]);
  }
}

const NAMED_ENTITIES: Record<string, string> = { lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0', amp: '&' };

/** Decodes the entities Mustache and templates produce (named and numeric); `&amp;` in the same pass, so never twice. */
const decodeEntities = (text: string) =>
  text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, name: string) => {
    if (name[0] === '#') {
      const code = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
      return Number.isFinite(code) && code <= 0x10ffff ? String.fromCodePoint(code) : entity;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? entity;
  });

const htmlToText = (html: string) =>
  decodeEntities(
    html
      .replace(/<a [^>]*href="([^"]*)"[^>]*>(.*?)<\/a>/gi, '$2: $1')
      .replace(/<\/(p|div|h\d|li)>|<br\s*\/?>/gi, '\n')
      .replace(/<[^>]+>/g, ''),
  )
    .replace(/\n{3,}/g, '\n\n')
    .trim();

/** Variables whose values are links carry one-time tokens; copies kept or printed for production get this instead. */
const HIDDEN_LINK = '[link hidden]';
const hideLinks = (variables: Record<string, string>) =>
  Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, /^https?:\/\//i.test(value) ? HIDDEN_LINK : value]));

/** Renders with Mustache: `{{x}}` HTML-escaped in the body, subjects unescaped (they are not HTML). */
export function render(subject: string | null, body: string, variables: Record<string, string>) {
  const html = Mustache.render(body, variables);
  return {
    subject: subject === null ? null : Mustache.render(subject, variables, {}, { escape: (v: string) => v }),
    html,
    text: htmlToText(html),
  };
}

export async function getTemplate(ctx: TenantContext, input: { id: string; key: string }) {
  ownApplication(ctx, input.id);
  return toTemplate(await effective(ctx.em, input.id, input.key));
}

export async function putTemplate(
  ctx: TenantContext,
  input: { id: string; key: string; subject?: string | null; body?: string | null; delivered?: boolean | null },
) {
  ownApplication(ctx, input.id);
  const entry = catalogOrThrow(input.key);
  if (input.subject && !entry.has_subject) {
    throw new AppError('validation_failed', 'This template has no subject', [{ path: 'subject', message: 'not supported' }]);
  }
  checkSyntax('subject', input.subject);
  checkSyntax('body', input.body);
  let override = await ctx.em.findOne(TemplateOverrideEntity, { application: input.id, key: input.key });
  override ??= ctx.em.create(TemplateOverrideEntity, {
    id: newId(),
    application: input.id,
    key: input.key,
    subject: null,
    body: null,
    delivered: null,
  });
  if (input.subject !== undefined) override.subject = input.subject;
  if (input.body !== undefined) override.body = input.body;
  if (input.delivered !== undefined) override.delivered = input.delivered;
  override.updatedAt = new Date();
  await ctx.em.flush();
  return toTemplate(await effective(ctx.em, input.id, input.key));
}

export async function resetTemplate(ctx: TenantContext, input: { id: string; key: string }) {
  ownApplication(ctx, input.id);
  catalogOrThrow(input.key);
  await ctx.em.nativeDelete(TemplateOverrideEntity, { application: input.id, key: input.key });
  return { id: input.key, deleted: true as const };
}

export async function previewTemplate(
  ctx: TenantContext,
  input: { id: string; key: string; subject?: string; body?: string; variables?: Record<string, string> },
) {
  ownApplication(ctx, input.id);
  const current = await effective(ctx.em, input.id, input.key);
  checkSyntax('subject', input.subject);
  checkSyntax('body', input.body);
  const examples = Object.fromEntries(current.entry.variables.map((v) => [v.name, v.example]));
  return render(current.entry.has_subject ? (input.subject ?? current.subject) : null, input.body ?? current.body, {
    ...examples,
    app_name: ctx.application.name,
    ...input.variables,
  });
}

/**
 * Queues a catalog message to one recipient in `em` (the caller flushes, in its transaction when it has one); the
 * mail outbox sends it. A template marked not delivered is handed to the developer as a `message.created` event
 * instead. Every message is in the message log; links are kept only for development applications, because they
 * carry one-time tokens. `suppressed`: do all the same work but send nothing (a magic link to an address that cannot
 * sign in answers in the same time as one that can).
 */
export async function sendTemplate(
  em: EntityManager,
  services: Services,
  application: Application,
  key: string,
  to: string,
  variables: Record<string, string>,
  options: { suppressed?: boolean } = {},
): Promise<{ id: string; status: 'queued' | 'suppressed' | 'not_delivered' }> {
  const template = await effective(em, application.id, key);
  const view = { app_name: application.name, email: to, ...variables };
  const rendered = render(template.subject, template.body, view);
  // What is kept (message log) or printed (console mail) for a production application is rendered without the
  // links themselves — not scrubbed afterwards, which escaping can defeat.
  const shown = application.environment === 'development' ? rendered : render(template.subject, template.body, hideLinks(view));
  const status = options.suppressed ? 'suppressed' : template.delivered ? 'queued' : 'not_delivered';
  const message = queueMail(em, services, {
    applicationId: application.id,
    templateKey: key,
    channel: template.entry.channel,
    to,
    shown: { subject: rendered.subject, text: shown.text },
    mail: { to, subject: rendered.subject ?? '', html: rendered.html, text: rendered.text, consoleText: shown.text },
    status,
  });
  if (status === 'not_delivered') {
    // The developer delivers it: the event is the channel, so it carries the variables (links included).
    recordEvent(em, application.id, 'message.created', {
      id: message.id,
      template_key: key,
      channel: template.entry.channel,
      to,
      subject: rendered.subject,
      html: rendered.html,
      text: rendered.text,
      variables,
    });
  }
  return { id: message.id, status };
}

/** Test sends per application and minute: each one is a mail the service sends to an address the caller chose. */
const TEST_SENDS = { name: 'template_test', points: 10, windowS: 60 };

/**
 * A test send: the template as the application sends it now (its override, else the default), with the catalog's
 * example variables and the recipient's address, through the same outbox and message log as every message.
 */
export async function testTemplate(ctx: TenantContext, input: { id: string; key: string; to: string }) {
  const application = ownApplication(ctx, input.id);
  const entry = catalogOrThrow(input.key);
  await ctx.services.rateLimits.consume([{ ...TEST_SENDS, key: application.id }], ctx.response.headers);
  const examples = Object.fromEntries(entry.variables.map((v) => [v.name, v.example]));
  const sent = await sendTemplate(ctx.em, ctx.services, application, input.key, input.to, {
    ...examples,
    app_name: application.name,
    email: input.to,
  });
  await ctx.em.flush();
  // sendTemplate answers `suppressed` only when asked to suppress, which a test send never does.
  return { message_id: sent.id, to: input.to, status: sent.status as 'queued' | 'not_delivered' };
}

/** The user's sign-in factors changed (`passkey_added`, `mfa_factor_removed`, …): they are told, if they have an email. */
export async function sendSecurityNotice(
  ctx: TenantContext,
  user: { primaryEmail?: string | null },
  key: 'passkey_added' | 'passkey_removed' | 'mfa_factor_added' | 'mfa_factor_removed',
  name: string,
): Promise<void> {
  if (!user.primaryEmail) return;
  await sendTemplate(ctx.em, ctx.services, ctx.application, key, user.primaryEmail, {
    name,
    occurred_at: new Date().toISOString(),
  });
  await ctx.em.flush();
}
