import type { Context } from '../../context.ts';
import type { Application } from './application.entity.ts';

/**
 * A call made for one application (the tenant): all that a service reading or writing its data needs. An end user's
 * browser (`endUserProcedure`) is one: the application of `x-application-id`, whose allowed origins include the
 * caller's. A secret key's (`SecretKeyContext`) and a signed-in end user's (`SignedInContext`) extend it.
 */
export interface TenantContext extends Context {
  /** The application every authenticated call resolves first (`x-application-id`, or the token's). */
  application: Application;
}

/** A call with the operator token, or of a console operator allowed an operator route (`operatorCredentials`). */
export interface OperatorContext extends Context {
  operator: true;
  /**
   * Set when the caller may act on some applications only (a console operator who owns them may delete them): whether
   * it may act on this one. Unset: every application (the operator token, an instance-wide owner).
   */
  owns?: (applicationId: string) => boolean;
}
