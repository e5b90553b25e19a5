import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { memberSuspendSteps } from '../organizations/organizations.hooks.ts';
import { banSteps } from '../users/users.hooks.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { RefreshTokenEntity } from './refresh-token.entity.ts';
import { SessionEntity } from './session.entity.ts';
import { endUserSessionProcedures, revokeUserSessionsProcedure, userSessionsRouter } from './sessions.router.ts';
import { SessionCreatedEventSchema, SessionRevokedEventSchema, SessionSteppedUpEventSchema } from './sessions.schema.ts';
import {
  mergeSessions,
  purgeRefreshTokens,
  purgeSessions,
  revokeSessionsOnBan,
  revokeSessionsOnSuspend,
} from './sessions.service.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'session.created': SessionCreatedEventSchema,
  'session.revoked': SessionRevokedEventSchema,
  'session.stepped_up': SessionSteppedUpEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Sessions and refresh tokens: the end user's tokens, sessions and profile. */
export const sessionsModule = defineModule({
  name: 'sessions',
  entities: [SessionEntity, RefreshTokenEntity],
  procedures: {
    users: { revokeSessions: revokeUserSessionsProcedure, sessions: userSessionsRouter },
    auth: endUserSessionProcedures,
  },
  hooks: [
    mergeSteps.entry('sessions', mergeSessions),
    banSteps.entry('sessions', revokeSessionsOnBan),
    memberSuspendSteps.entry('sessions', revokeSessionsOnSuspend),
    purgeSteps.entry('refresh_tokens', purgeRefreshTokens),
    purgeSteps.entry('sessions', purgeSessions),
  ],
  events,
});
