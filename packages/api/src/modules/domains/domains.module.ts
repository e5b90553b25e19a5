import { housekeepingTasks } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { CustomDomainEntity } from './custom-domain.entity.ts';
import { domainsRouter } from './domains.router.ts';
import { DomainAddedEventSchema, DomainVerifiedEventSchema } from './domains.schema.ts';
import { recheckPendingDomains } from './domains.service.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'custom_domain.added': DomainAddedEventSchema,
  'custom_domain.verified': DomainVerifiedEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Custom domains, verified by DNS; housekeeping re-checks the pending ones. */
export const domainsModule = defineModule({
  name: 'domains',
  entities: [CustomDomainEntity],
  procedures: { domains: domainsRouter },
  tag: {
    name: 'Domains',
    description:
      "Custom domains of an application, verified through a DNS TXT record; `/v1/domains/allowed` answers the TLS proxy's on-demand certificate `ask`.",
  },
  hooks: [housekeepingTasks.entry('custom_domains_recheck', recheckPendingDomains)],
  events,
});
