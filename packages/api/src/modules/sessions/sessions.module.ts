import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule } from '../../lib/modules.ts';
import { banSteps } from '../users/users.hooks.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { RefreshTokenEntity } from './refresh-token.entity.ts';
import { SessionEntity } from './session.entity.ts';
import { endUserSessionProcedures, revokeUserSessionsProcedure } from './sessions.router.ts';
import { mergeSessions, purgeRefreshTokens, purgeSessions, revokeSessionsOnBan } from './sessions.service.ts';

/** Sessions and refresh tokens: the end user's tokens, sessions and profile. */
export const sessionsModule = defineModule({
  name: 'sessions',
  entities: [SessionEntity, RefreshTokenEntity],
  procedures: { users: { revokeSessions: revokeUserSessionsProcedure }, auth: endUserSessionProcedures },
  hooks: [
    mergeSteps.entry('sessions', mergeSessions),
    banSteps.entry('sessions', revokeSessionsOnBan),
    purgeSteps.entry('refresh_tokens', purgeRefreshTokens),
    purgeSteps.entry('sessions', purgeSessions),
  ],
});
