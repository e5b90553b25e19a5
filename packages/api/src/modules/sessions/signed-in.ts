import { authenticatedProcedure } from '../../trpc.ts';
import { authenticateSignedIn } from './sessions.service.ts';

/**
 * Signed-in end-user routes (ES★): a valid access token of a session that is still live, of an active user. The
 * features beside sign-in may use it (and `SignedInContext`): it is the caller, not the session machinery.
 */
export const signedInProcedure = authenticatedProcedure('signed_in', authenticateSignedIn);
