import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { portalLinksRouter } from './portal.router.ts';
import { purgePortalLinks } from './portal.service.ts';
import { PortalLinkEntity } from './portal-link.entity.ts';

/**
 * The admin portal (CONTRACT §8): links for an organization's IT administrator and the sessions they open. The pages
 * are the server's (apps/server/src/portal); each intent's operations are here (`portal.<intent>.ts`), bound to the
 * session's organization.
 */
export const portalModule = defineModule({
  name: 'portal',
  entities: [PortalLinkEntity],
  procedures: { organizations: { portalLinks: portalLinksRouter } },
  hooks: [purgeSteps.entry('portal_links', purgePortalLinks)],
});
