import { type Context, header } from '../../context.ts';
import { AppError } from '../../errors.ts';
import { actAs } from '../../lib/acting.ts';
import { constantTimeEqual, sha256 } from '../../lib/crypto.ts';
import { isUuid } from '../../lib/ids.ts';
import { Registry } from '../../lib/modules.ts';
import { authenticatedProcedure, DeferredCredential, type Meta } from '../../trpc.ts';
import type { Application } from './application.entity.ts';
import { applicationById } from './applications.service.ts';
import type { OperatorContext } from './contexts.ts';
import { allowOrigin, originCondition } from './cors.ts';

/**
 * The callers whose credential is the application itself or the process's: the operator, and the end user's browser
 * (a publishable application id and its origin). Their procedure builders live here, with the application, so that
 * every module can use them; the secret key's are in api-keys, the signed-in end user's in sessions.
 */

/** The bearer token of an `Authorization` header: undefined without one, '' when it is not a bearer token. */
export function bearer(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(value);
  return match?.[1] ?? '';
}

export function authenticateOperator(operatorTokenHash: string, authorization: string | undefined): void {
  const token = bearer(authorization);
  if (token === undefined) throw new AppError('missing_credentials', 'An operator token is required');
  if (!constantTimeEqual(sha256(token), operatorTokenHash)) throw new AppError('invalid_credentials', 'Invalid operator token');
}

export const applicationNotResolved = () => new AppError('application_not_resolved', 'Unknown or missing x-application-id');

/** Resolves the application of `x-application-id` (401 `application_not_resolved`); public routes use it too. */
export async function resolveApplication(ctx: Context): Promise<Application> {
  const id = header(ctx, 'x-application-id');
  const application = id ? await applicationById(ctx.em, id) : undefined;
  if (!application) throw applicationNotResolved();
  return application;
}

async function authenticateEndUser(ctx: Context): Promise<{ application: Application }> {
  const application = await resolveApplication(ctx);
  allowOrigin(ctx, application);
  return { application };
}

/** The application of an end-user procedure that reads it inside its own statement, for that statement. */
export interface ApplicationInStatement {
  /** The presented `x-application-id` (a UUID): the statement's tenant, trusted only once `accept` has passed. */
  id: string;
  /**
   * `allowOrigin`'s verdict as a condition on the statement's application row (`originCondition`): the statement
   * gates its writes on it, so a call from an origin the application does not allow changes nothing.
   */
  origin: { sql: (alias: string) => string; params: unknown[] };
  /**
   * Judges the application the statement read (undefined: no such application) as the authenticator would (the
   * application, then the origin), sets the CORS headers, and answers it.
   */
  accept(application: Application | undefined): Application;
}

/** An end user's browser whose application its procedure reads and checks inside its own statement. */
export interface EndUserInStatementContext extends Context {
  applicationInStatement: ApplicationInStatement;
  deferredCredential: DeferredCredential;
}

/**
 * Defers an end user's application to the procedure's statement. A header that cannot name one is answered at once,
 * as `resolveApplication` answers it (without a query).
 */
async function deferApplication(ctx: Context): Promise<Omit<EndUserInStatementContext, keyof Context>> {
  const id = header(ctx, 'x-application-id');
  if (!id || !isUuid(id)) throw applicationNotResolved();
  const deferredCredential = new DeferredCredential(async () => {
    await authenticateEndUser(ctx);
  });
  const applicationInStatement: ApplicationInStatement = {
    id,
    origin: originCondition(ctx),
    accept(application) {
      deferredCredential.settled = true;
      if (!application) throw applicationNotResolved();
      allowOrigin(ctx, application);
      return application;
    },
  };
  return { applicationInStatement, deferredCredential };
}

/** The operator, as the audit log names them: there is one operator token per deployment. */
export const OPERATOR_ACTOR = { type: 'operator', id: 'operator' } as const;

/**
 * A credential other than the operator token that operator routes accept (the console operator's access token,
 * `modules/operators`): asked only for a bearer that is not the operator token. It answers the caller (named with
 * `actAs`), undefined when the token is not its kind (401 `invalid_credentials` follows), or throws its own refusal.
 */
export type OperatorCredential = (
  ctx: Context,
  token: string,
  meta: Meta | undefined,
) => Promise<Omit<OperatorContext, keyof Context> | undefined>;

export const operatorCredentials = new Registry<OperatorCredential>('operator credential', { single: true });

/** Operator routes: the operator token (or a credential of `operatorCredentials`). */
export const operatorProcedure = authenticatedProcedure(
  'operator',
  async (ctx, meta): Promise<Omit<OperatorContext, keyof Context>> => {
    const authorization = header(ctx, 'authorization');
    try {
      authenticateOperator(ctx.services.operatorTokenHash, authorization);
    } catch (error) {
      const token = bearer(authorization);
      if (!(error instanceof AppError) || error.code !== 'invalid_credentials' || !token) throw error;
      for (const credential of ctx.services.hooks.get(operatorCredentials)) {
        const accepted = await credential(ctx, token, meta);
        if (accepted) return accepted;
      }
      throw error;
    }
    actAs(OPERATOR_ACTOR);
    return { operator: true as const };
  },
);

/** End-user routes (ES): the application from `x-application-id`, then the browser's origin against its allowlist. */
export const endUserProcedure = authenticatedProcedure('end_user', authenticateEndUser);

/**
 * An end-user route on a hot path whose statement reads and checks the application itself (`applicationInStatement`),
 * which saves the round trip; its answers and their order are those of `endUserProcedure`.
 */
export const endUserInStatementProcedure = authenticatedProcedure('end_user', deferApplication);
