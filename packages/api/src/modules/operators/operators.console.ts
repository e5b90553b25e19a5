import { createHmac } from 'node:crypto';
import { createContext, type RequestInfo, type Services } from '../../context.ts';
import { preparedQuery } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { withActor } from '../../lib/acting.ts';
import { constantTimeEqual } from '../../lib/crypto.ts';
import { applicationById } from '../applications/applications.service.ts';
import { OPERATOR_ACTOR } from '../applications/callers.ts';
import type { OperatorContext } from '../applications/contexts.ts';
import { browserAccessToken, findBrowserSession } from '../sessions/browser-sessions.ts';
import { OperatorEntity } from './operator.entity.ts';
import { type OperatorRoleName, strongestRole } from './operators.roles.ts';
import { AddOperatorInputSchema } from './operators.schema.ts';
import { addOperator, consoleApplicationId } from './operators.service.ts';

/** An application the operator may open in the console, with their effective role there. */
export interface ConsoleApplication {
  id: string;
  name: string;
  environment: string;
  role: OperatorRoleName;
}

/** What the console's page gets for its signed-in operator (`POST /console/session`). */
export interface ConsoleSession {
  access_token: string;
  expires_at: string;
  aal: number;
  operator: { id: string; email: string; roles: Array<{ application_id: string | null; role: OperatorRoleName }> };
  applications: ConsoleApplication[];
}

const OPERATOR_SQL = `select o.id, u.primary_email as email,
         coalesce((select json_agg(json_build_object('application_id', r.application_id, 'role', r.role) order by r.created_at)
                     from operator_roles r where r.operator_id = o.id), '[]'::json) as roles
    from operators o join users u on u.id = o.user_id
   where o.user_id = ?`;

/**
 * The console's signed-in operator: the console application's browser session of `browserToken` (live, its user
 * active), who must be an operator; an access token of that session (the console credential, verified on every call
 * by `operators.credential.ts`), and the applications their roles open — every one (the reserved console excepted)
 * for an instance-wide role, else those named. Undefined when the browser is signed out or its person is no operator.
 */
export async function consoleSession(services: Services, browserToken: string): Promise<ConsoleSession | undefined> {
  const em = services.orm.em.fork();
  const consoleId = await consoleApplicationId(em, services);
  const application = consoleId ? await applicationById(em, consoleId) : undefined;
  if (!application) return undefined;
  const session = await findBrowserSession(em, application, browserToken);
  if (!session) return undefined;
  const [operator] = await preparedQuery<{
    id: string;
    email: string;
    roles: Array<{ application_id: string | null; role: OperatorRoleName }>;
  }>(em, 'console_session_operator', OPERATOR_SQL, [session.userId]);
  if (!operator) return undefined;
  const instanceRole = strongestRole(operator.roles.filter((r) => r.application_id === null).map((r) => r.role));
  const named = operator.roles.flatMap((r) => (r.application_id ? [r.application_id] : []));
  const rows = await em.execute<Array<{ id: string; name: string; environment: string }>>(
    `select id, name, environment from applications
      where reserved is null and (? or id in (select value::uuid from jsonb_array_elements_text(?::jsonb)))
      order by created_at, id`,
    [instanceRole !== undefined, JSON.stringify(named)],
  );
  const applications = rows.flatMap((row) => {
    const role = strongestRole(
      operator.roles.filter((r) => r.application_id === null || r.application_id === row.id).map((r) => r.role),
    );
    return role ? [{ ...row, role }] : [];
  });
  const tokens = await browserAccessToken(em, services, application, session);
  return {
    access_token: tokens.access_token,
    expires_at: new Date(Date.now() + tokens.expires_in * 1000).toISOString(),
    aal: session.aal,
    operator,
    applications,
  };
}

/** The console application's id and its OpenID client's (the console's page signs in through it), when both exist. */
export async function consoleClient(services: Services): Promise<{ applicationId: string; clientId: string } | undefined> {
  const em = services.orm.em.fork();
  const applicationId = await consoleApplicationId(em, services);
  if (!applicationId) return undefined;
  const [row] = await preparedQuery<{ id: string }>(
    em,
    'console_client',
    'select id from oauth2_clients where application_id = ?',
    [applicationId],
  );
  return row ? { applicationId, clientId: row.id } : undefined;
}

/** How long the first-operator setup link printed at start works (while no operator exists). */
const SETUP_TTL_S = 24 * 3600;
const setupMac = (services: Services, expires: number) =>
  createHmac('sha256', services.secretBox.deriveKey('console-setup')).update(String(expires)).digest('base64url');

/**
 * The link the start prints while no operator exists (`{base}/console/setup?token=cs_…`): whoever opens it first names
 * the first operator, an instance-wide owner. Signed with the master key, so every process accepts it; it works for
 * 24 hours and only until an operator exists (it is a one-time link: the first operator ends it).
 */
export function consoleSetupLink(services: Services): string {
  const expires = Math.floor(Date.now() / 1000) + SETUP_TTL_S;
  const url = new URL(`${services.baseUrl}/console/setup`);
  url.searchParams.set('token', `cs_${expires}.${setupMac(services, expires)}`);
  return url.toString();
}

/** Whether `token` is a setup link's token of this service, still within its 24 hours. */
export function consoleSetupTokenValid(services: Services, token: unknown): boolean {
  const match = typeof token === 'string' ? /^cs_(\d{10})\.([A-Za-z0-9_-]{43})$/.exec(token) : null;
  if (!match?.[1] || !match[2]) return false;
  const expires = Number(match[1]);
  return expires > Date.now() / 1000 && constantTimeEqual(setupMac(services, expires), match[2]);
}

/**
 * The first operator, from the setup link: an instance-wide owner of `email`, with their one-time sign-in link, as
 * `POST /v1/operators` would answer it (the audit log names the operator token's holder, who started the service).
 * The operators table is locked for the check, so of concurrent setups exactly one wins; the rest, and any setup once
 * an operator exists, are 409 `conflict`.
 */
export async function addFirstOperator(services: Services, request: RequestInfo, email: string) {
  const parsed = AddOperatorInputSchema.shape.email.safeParse(email);
  if (!parsed.success) {
    throw new AppError('validation_failed', 'Enter a valid email address', [{ path: 'email', message: 'invalid email' }]);
  }
  const base = createContext(services, request);
  return withActor(OPERATOR_ACTOR, () =>
    base.em.transactional(async (em) => {
      await em.execute('lock table operators in share row exclusive mode');
      if ((await em.count(OperatorEntity, {})) > 0) throw new AppError('conflict', 'The console has an operator already');
      const ctx: OperatorContext = { ...base, em, operator: true };
      return addOperator(ctx, { email: parsed.data, role: 'owner', application_id: null });
    }),
  );
}
