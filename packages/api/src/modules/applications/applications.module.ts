import { defineModule } from '../../lib/modules.ts';
import { ApplicationEntity } from './application.entity.ts';
import { ApplicationLogoEntity } from './application-logo.entity.ts';
import { applicationProcedures } from './applications.router.ts';
import { EditableTenantRowEntity, TenantRowEntity } from './tenant-row.entity.ts';

/** Applications (tenants): their settings, allowed origins and CORS. */
export const applicationsModule = defineModule({
  name: 'applications',
  // The abstract bases too: MikroORM discovers the entities that extend them through them.
  entities: [ApplicationEntity, ApplicationLogoEntity, TenantRowEntity, EditableTenantRowEntity],
  procedures: { applications: applicationProcedures },
  tag: {
    name: 'Applications',
    description:
      'Applications (tenants): settings, allowed origins, usage statistics and the message log. Created with the operator token.',
  },
});
