import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { TemplateOverrideEntity } from './template-override.entity.ts';
import { templatesRouter } from './templates.router.ts';
import { MessageCreatedEventSchema } from './templates.schema.ts';

/** The events this module emits, with their payload schemas. */
const events = { 'message.created': MessageCreatedEventSchema } satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** The mails Gatehouse sends and their per-application overrides. */
export const templatesModule = defineModule({
  name: 'templates',
  entities: [TemplateOverrideEntity],
  procedures: { templates: templatesRouter },
  tag: {
    name: 'Templates',
    description: 'The mails Gatehouse sends, with per-application overrides and previews.',
  },
  events,
});
