import type { TenantContext } from '../applications/contexts.ts';
import type { User } from '../users/user.entity.ts';
import type { Session } from './session.entity.ts';

/** A signed-in end user (ES★): the application, the verified session (still live) and its user (still active). */
export interface SignedInContext extends TenantContext {
  session: Session;
  user: User;
}
