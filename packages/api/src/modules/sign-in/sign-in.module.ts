import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { MagicLinkEntity } from './magic-link/magic-link.entity.ts';
import { purgeMagicLinks } from './magic-link/magic-link.service.ts';
import { PendingTokenEntity } from './pending-token.entity.ts';
import { signInProcedures } from './sign-in.router.ts';
import { AccessDeniedEventSchema } from './sign-in.schema.ts';
import { purgePendingTokens } from './sign-in.service.ts';

/** The events this module emits, with their payload schemas. */
const events = { 'access.denied': AccessDeniedEventSchema } satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** The sign-in state machine, magic links and consent acceptance; owns the sign-in checks and second factor sources. */
export const signInModule = defineModule({
  name: 'sign-in',
  entities: [PendingTokenEntity, MagicLinkEntity],
  procedures: { auth: signInProcedures },
  tag: {
    name: 'End-user sign-in',
    description:
      "Called from the end user's browser with the publishable application id: magic links, consent, tokens, the current user and their sessions.",
  },
  hooks: [purgeSteps.entry('pending_tokens', purgePendingTokens), purgeSteps.entry('magic_links', purgeMagicLinks)],
  events,
});
