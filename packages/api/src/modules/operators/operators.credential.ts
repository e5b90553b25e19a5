import type { Context } from '../../context.ts';
import { preparedQuery } from '../../db/orm.ts';
import { AppError, notFound, stepUpRequired } from '../../errors.ts';
import { actAs } from '../../lib/acting.ts';
import type { BearerCredential } from '../api-keys/api-keys.service.ts';
import { grants } from '../api-keys/api-keys.service.ts';
import { applicationFromRow } from '../applications/applications.service.ts';
import type { OperatorCredential } from '../applications/callers.ts';
import { verifyAccessToken } from '../signing-keys/signing-keys.service.ts';
import { ROLE_SCOPES, strongestRole } from './operators.roles.ts';
import { consoleApplicationId } from './operators.service.ts';

/**
 * The console credential: an access token of the console application's session (ARCHITECTURE "The console"). It is
 * verified like any session token (EdDSA, the console's own key set, `iss`, `aud`, `exp`), then one statement reads
 * the session (live), its user (active), the operator, every role they hold and the target application, so a removed
 * operator, a revoked session or a changed role counts from the next request. Its `aal` is the lower of the token's
 * and the session's (a token issued before a step-up keeps what it said).
 */
interface ConsoleCaller {
  operatorId: string;
  aal: number;
  roles: Array<{ application_id: string | null; role: string }>;
  target: Record<string, any> | null;
}

const CONSOLE_CALLER_SQL = `select o.id as operator_id, s.aal,
         (select row_to_json(t) from applications t where t.id = ?) as target,
         coalesce((select json_agg(json_build_object('application_id', r.application_id, 'role', r.role))
                     from operator_roles r where r.operator_id = o.id), '[]'::json) as roles
    from sessions s join users u on u.id = s.user_id join operators o on o.user_id = u.id
   where s.id = ? and s.application_id = ? and s.user_id = ? and s.revoked_at is null and s.expires_at > now()
     and u.status = 'active'`;

/** The console operator of `token` (undefined: not a console access token at all), read for `target`. */
async function consoleCaller(ctx: Context, token: string, target: string | null): Promise<ConsoleCaller | undefined> {
  const consoleId = await consoleApplicationId(ctx.em, ctx.services);
  if (!consoleId) return undefined;
  let claims: Awaited<ReturnType<typeof verifyAccessToken>>;
  try {
    claims = await verifyAccessToken(ctx, consoleId, token);
  } catch {
    return undefined;
  }
  const [row] = await preparedQuery<{
    operator_id: string;
    aal: number;
    target: Record<string, any> | null;
    roles: ConsoleCaller['roles'];
  }>(ctx.em, 'console_operator', CONSOLE_CALLER_SQL, [target, claims.sid, consoleId, claims.sub]);
  // A console token whose session ended, or whose person is no operator (any more): the token's answer.
  if (!row) throw new AppError('invalid_token', 'The console session has ended, or its person is not an operator');
  return { operatorId: row.operator_id, aal: Math.min(row.aal, claims.aal), roles: row.roles, target: row.target };
}

/**
 * Secret-key procedures called from the console (`x-application-id` the target application): the operator's
 * strongest role there (a role for that application or for every one; none, or a reserved application: 404 as for
 * another tenant's), the procedure's scope against the role's (403 `insufficient_scope`), and a write only from a
 * session at aal 2 (403 `step_up_required`). Events name the operator as their actor.
 */
export const consoleBearer: BearerCredential = async (ctx, presented, scope) => {
  const caller = await consoleCaller(ctx, presented.token, presented.applicationId);
  if (!caller) return undefined;
  const target = caller.target;
  const role =
    target && target.reserved === null
      ? strongestRole(caller.roles.filter((r) => r.application_id === null || r.application_id === target.id).map((r) => r.role))
      : undefined;
  if (!target || !role) throw notFound('Application');
  const scopes = ROLE_SCOPES[role];
  if (!grants(scopes, scope)) throw new AppError('insufficient_scope', `The ${role} role lacks the ${scope} scope`);
  if (!scope.endsWith(':read') && caller.aal < 2) throw stepUpRequired();
  actAs({ type: 'operator', id: caller.operatorId });
  return { application: applicationFromRow(target), scopes };
};

const isRead = (meta: Parameters<OperatorCredential>[2]) => meta?.openapi?.method === 'GET';
const isApplicationDelete = (meta: Parameters<OperatorCredential>[2]) =>
  meta?.openapi?.method === 'DELETE' && meta.openapi.path === '/v1/applications/{id}';

/**
 * Operator routes called from the console: an instance-wide owner may do what the operator token does (applications,
 * operators); an owner of some applications may delete those (`owns`). Anyone else: 403 `insufficient_scope`. A write
 * needs a session at aal 2.
 */
export const consoleOperator: OperatorCredential = async (ctx, token, meta) => {
  const caller = await consoleCaller(ctx, token, null);
  if (!caller) return undefined;
  const instanceRole = strongestRole(caller.roles.filter((r) => r.application_id === null).map((r) => r.role));
  const owned = new Set(caller.roles.flatMap((r) => (r.role === 'owner' && r.application_id ? [r.application_id] : [])));
  const mayAct = instanceRole === 'owner' || (isApplicationDelete(meta) && owned.size > 0);
  if (!mayAct) throw new AppError('insufficient_scope', 'Only an instance-wide owner may do this');
  if (!isRead(meta) && caller.aal < 2) throw stepUpRequired();
  actAs({ type: 'operator', id: caller.operatorId });
  return instanceRole === 'owner'
    ? { operator: true as const }
    : { operator: true as const, owns: (id: string) => owned.has(id) };
};
