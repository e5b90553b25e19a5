import { defineModule } from '../../lib/modules.ts';
import { TemplateOverrideEntity } from './template-override.entity.ts';
import { templatesRouter } from './templates.router.ts';

/** The mails Gatehouse sends and their per-application overrides. */
export const templatesModule = defineModule({
  name: 'templates',
  entities: [TemplateOverrideEntity],
  procedures: { templates: templatesRouter },
  tag: {
    name: 'Templates',
    description: 'The mails Gatehouse sends, with per-application overrides and previews.',
  },
});
