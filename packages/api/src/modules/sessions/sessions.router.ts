import { z } from 'zod';
import { DeletedSchema, IdParamSchema } from '../../lib/schemas.ts';
import { router } from '../../trpc.ts';
import { secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { endUserInStatementProcedure } from '../applications/callers.ts';
import { CurrentUserSchema, UpdateMeInputSchema } from '../users/users.schema.ts';
import { getMe, updateMe } from './me.service.ts';
import {
  RefreshInputSchema,
  RevokedSessionsSchema,
  SessionSchema,
  SwitchOrganizationInputSchema,
  TokensSchema,
} from './sessions.schema.ts';
import {
  getCurrentSession,
  listSessions,
  listUserSessions,
  refreshSession,
  revokeOwnSession,
  revokeSessionsOfUser,
  revokeUserSession,
  signOut,
  switchOrganization,
} from './sessions.service.ts';
import { signedInProcedure } from './signed-in.ts';

/** `users.revokeSessions` (in the users namespace): sessions are above users. */
export const revokeUserSessionsProcedure = secretKeyProcedure('users:write')
  .meta({
    openapi: {
      method: 'POST',
      path: '/v1/users/{id}/sessions/revoke',
      tags: ['Users'],
      summary: 'Sign the user out everywhere',
    },
  })
  .input(IdParamSchema)
  .output(RevokedSessionsSchema)
  .mutation(({ ctx, input }) => revokeSessionsOfUser(ctx, input.id));

/** `users.sessions.*` (in the users namespace): support's view of a user's live sessions, and revoking one. */
export const userSessionsRouter = router({
  list: secretKeyProcedure('users:read')
    .meta({ openapi: { method: 'GET', path: '/v1/users/{id}/sessions', tags: ['Users'], summary: "A user's live sessions" } })
    .input(IdParamSchema)
    .output(z.array(SessionSchema))
    .query(({ ctx, input }) => listUserSessions(ctx, input.id)),
  revoke: secretKeyProcedure('users:write')
    .meta({
      openapi: {
        method: 'DELETE',
        path: '/v1/users/{id}/sessions/{session_id}',
        tags: ['Users'],
        summary: "Revoke one of a user's sessions",
      },
    })
    .input(z.strictObject({ id: z.uuid(), session_id: z.uuid() }))
    .output(DeletedSchema)
    .mutation(({ ctx, input }) => revokeUserSession(ctx, input.id, input.session_id)),
});

// The end-user surface's tag (owned by the sign-in module above, which declares it).
const tags = ['End-user sign-in'];
const none = z.strictObject({}).optional();

/** `auth.*`: tokens, the current user and their sessions. */
export const endUserSessionProcedures = {
  token: router({
    refresh: endUserInStatementProcedure
      .meta({
        openapi: { method: 'POST', path: '/v1/auth/token/refresh', tags, summary: 'Rotate the refresh token for new tokens' },
      })
      .input(RefreshInputSchema)
      .output(TokensSchema)
      .mutation(({ ctx, input }) => refreshSession(ctx, input.refresh_token)),
  }),
  signOut: signedInProcedure
    .meta({ openapi: { method: 'POST', path: '/v1/auth/sign-out', tags, summary: 'End the current session' } })
    .input(none)
    .output(DeletedSchema)
    .mutation(({ ctx }) => signOut(ctx)),
  me: {
    get: signedInProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/auth/me', tags, summary: 'The signed-in user' } })
      .input(none)
      .output(CurrentUserSchema)
      .query(({ ctx }) => getMe(ctx)),
    update: signedInProcedure
      .meta({ openapi: { method: 'PATCH', path: '/v1/auth/me', tags, summary: "Update the signed-in user's profile" } })
      .input(UpdateMeInputSchema)
      .output(CurrentUserSchema)
      .mutation(({ ctx, input }) => updateMe(ctx, input)),
  },
  sessions: router({
    list: signedInProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/auth/sessions', tags, summary: "The signed-in user's live sessions" } })
      .input(none)
      .output(z.array(SessionSchema))
      .query(({ ctx }) => listSessions(ctx)),
    revoke: signedInProcedure
      .meta({ openapi: { method: 'DELETE', path: '/v1/auth/sessions/{id}', tags, summary: 'Revoke one of your sessions' } })
      .input(IdParamSchema)
      .output(DeletedSchema)
      .mutation(({ ctx, input }) => revokeOwnSession(ctx, input.id)),
  }),
  session: router({
    get: signedInProcedure
      .meta({
        openapi: {
          method: 'GET',
          path: '/v1/auth/session',
          tags,
          summary: 'The current session (aal, mfa_enrollment_required, …)',
        },
      })
      .input(none)
      .output(SessionSchema)
      .query(({ ctx }) => getCurrentSession(ctx)),
    switchOrganization: signedInProcedure
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/auth/session/organization',
          tags,
          summary: 'Choose the active organization (org, org_role)',
        },
      })
      .input(SwitchOrganizationInputSchema)
      .output(TokensSchema)
      .mutation(({ ctx, input }) => switchOrganization(ctx, input.organization_id)),
  }),
};
