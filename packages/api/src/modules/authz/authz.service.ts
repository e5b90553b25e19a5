import type { Context } from '../../context.ts';
import { type EntityManager, onlyRow, positional, preparedQuery } from '../../db/orm.ts';
import { AppError, type ErrorDetail } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import type { PageQuery } from '../../lib/pagination.ts';
import type { PresentedKeyRow, SecretKeyInStatementContext } from '../api-keys/api-keys.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import type { SignedInContext } from '../sessions/contexts.ts';
import type { DeleteStep } from '../users/users.hooks.ts';
import type { MergeStep } from '../users/users.merge.ts';
import { MAX_DEPTH, type RelationshipTuple, type TupleInput } from './authz.schema.ts';

/**
 * Relationship tuples and the questions asked of them. Every read is one SQL statement: a recursive CTE walks subject
 * sets breadth first (`UNION` removes a userset already reached at the same depth, so a cycle cannot grow a level;
 * the depth column bounds the walk). A userset first reached one hop beyond MAX_DEPTH means the answer could depend
 * on what lies deeper: 422 `depth_limit_exceeded`, unless access was already found. Organization usersets
 * (`organization:<id>#member`, `#<role>`) resolve from `organization_members` inside the same statement, so a member
 * added in one transaction is seen by the next check with no second write.
 */

/** A userset or subject: `type:id` with `relation` '' for a direct subject (a user). */
interface Ref {
  type: string;
  id: string;
  relation: string;
}

const parseObject = (object: string): Ref => {
  const colon = object.indexOf(':');
  return { type: object.slice(0, colon), id: object.slice(colon + 1), relation: '' };
};

const parseSubject = (subject: string): Ref => {
  const hash = subject.indexOf('#');
  const ref = parseObject(hash < 0 ? subject : subject.slice(0, hash));
  return { ...ref, relation: hash < 0 ? '' : subject.slice(hash + 1) };
};

const formatSubject = (type: string, id: string, relation: string) => `${type}:${id}${relation ? `#${relation}` : ''}`;

/** The user id of a direct `user:` subject (the membership join compares it as a uuid), else null. */
const directUser = (ref: Ref) => (ref.type === 'user' && ref.relation === '' ? ref.id : null);

interface TupleRow {
  object_type: string;
  object_id: string;
  relation: string;
  subject_type: string;
  subject_id: string;
  subject_relation: string;
  created_at: string | Date;
}

const toRelationshipTuple = (row: TupleRow): RelationshipTuple => ({
  object: `${row.object_type}:${row.object_id}`,
  relation: row.relation,
  subject: formatSubject(row.subject_type, row.subject_id, row.subject_relation),
  created_at: new Date(row.created_at).toISOString(),
});

const depthExceeded = () =>
  new AppError(
    'depth_limit_exceeded',
    `The subject sets nest deeper than ${MAX_DEPTH} levels: the answer cannot be decided within the depth limit`,
  );

/** A userset first reached at `$limit` (one beyond the deepest one followed): deeper ones were cut off. */
const EXCEEDED = `exists (select 1 from reach a where a.d = $limit and not exists (
    select 1 from reach b where b.t = a.t and b.i = a.i and b.r = a.r and b.d < $limit))`;

/**
 * Tuples as a JSON recordset parameter (one statement for a whole batch, the same on both drivers).
 */
const RECORDS = `json_to_recordset($2::json) as r(id uuid, object_type text, object_id text, relation text,
    subject_type text, subject_id text, subject_relation text)`;

const record = (t: TupleInput) => {
  const object = parseObject(t.object);
  const subject = parseSubject(t.subject);
  return {
    id: newId(),
    object_type: object.type,
    object_id: object.id,
    relation: t.relation,
    subject_type: subject.type,
    subject_id: subject.id,
    subject_relation: subject.relation,
  };
};

/**
 * Users a batch writes about must be users of this application that are not merged: a tuple naming a user that is
 * not there would outlive every deletion and merge. They are locked `FOR KEY SHARE` until the batch commits, so a
 * deletion or merge of one of them waits for it (and then removes or rewrites its tuples) or happened first (422).
 */
async function lockUsers(em: EntityManager, applicationId: string, writes: TupleInput[]): Promise<void> {
  const named = new Map<string, string>();
  writes.forEach((t, i) => {
    for (const [field, ref] of [
      ['object', parseObject(t.object)],
      ['subject', parseSubject(t.subject)],
    ] as const) {
      if (ref.type === 'user' && !named.has(ref.id)) named.set(ref.id, `writes.${i}.${field}`);
    }
  });
  if (named.size === 0) return;
  const rows = await em.execute<Array<{ id: string }>>(
    `select id from users where application_id = ? and status <> 'merged'
        and id in (select value::uuid from json_array_elements_text(?::json)) order by id for key share`,
    [applicationId, JSON.stringify([...named.keys()])],
  );
  const found = new Set(rows.map((r) => r.id));
  const details: ErrorDetail[] = [...named]
    .filter(([id]) => !found.has(id))
    .map(([, path]) => ({ path, message: 'no such user in this application' }));
  if (details.length) throw new AppError('user_not_found', 'A tuple names a user that does not exist', details);
}

const DELETE_TUPLES = positional(
  `with gone as (delete from authz_tuples x using ${RECORDS}
            where x.application_id = $1 and x.object_type = r.object_type and x.object_id = r.object_id
              and x.relation = r.relation and x.subject_type = r.subject_type and x.subject_id = r.subject_id
              and x.subject_relation = r.subject_relation returning 1)
         select count(*)::int as n from gone`,
);

const INSERT_TUPLES = positional(
  `with added as (insert into authz_tuples (id, application_id, object_type, object_id, relation, subject_type,
              subject_id, subject_relation, revision, created_at)
            select r.id, $1, r.object_type, r.object_id, r.relation, r.subject_type, r.subject_id, r.subject_relation,
                   $3::bigint, now()
              from ${RECORDS}
             order by r.object_type, r.object_id, r.relation, r.subject_type, r.subject_id, r.subject_relation
            on conflict on constraint authz_tuples_unique do nothing returning 1)
         select count(*)::int as n from added`,
);

/** `POST /v1/authz/tuples`: deletes and writes in one transaction; the batch's revision is its consistency token. */
export async function writeTuples(ctx: TenantContext, input: { writes: TupleInput[]; deletes: TupleInput[] }) {
  const applicationId = ctx.application.id;
  return ctx.em.transactional(async (em) => {
    await lockUsers(em, applicationId, input.writes);
    const { revision } = onlyRow(
      await em.execute<Array<{ revision: string }>>(`select nextval('authz_revisions')::text as revision`),
    );
    let deleted = 0;
    if (input.deletes.length) {
      const params = DELETE_TUPLES.params([applicationId, JSON.stringify(input.deletes.map(record))]);
      deleted = onlyRow(await em.execute<Array<{ n: number }>>(DELETE_TUPLES.sql, params)).n;
    }
    let written = 0;
    if (input.writes.length) {
      const params = INSERT_TUPLES.params([applicationId, JSON.stringify(input.writes.map(record)), revision]);
      written = onlyRow(await em.execute<Array<{ n: number }>>(INSERT_TUPLES.sql, params)).n;
    }
    return { consistency_token: revision, written, deleted };
  });
}

/**
 * `consistency`: every statement reads the primary, where every committed batch is visible, so each mode is met by
 * reading now. `at_least_as_fresh` refuses a token that no batch has answered yet (it cannot be met by waiting).
 */
async function honourConsistency(ctx: Context, consistency?: { mode: string; token?: string }): Promise<void> {
  if (consistency?.mode !== 'at_least_as_fresh') return;
  const [row] = await preparedQuery<{ issued: boolean }>(
    ctx.em,
    'authz_token_issued',
    `select (select case when is_called then last_value else 0 end from authz_revisions) >= ?::bigint as issued`,
    [consistency.token],
  );
  if (!row?.issued) {
    throw new AppError('validation_failed', 'The consistency token was not issued by this service', [
      { path: 'consistency.token', message: 'unknown consistency token' },
    ]);
  }
}

/**
 * The walk from an object#relation down its subject sets (`reach`: type, id, relation, depth), as expand takes it (and
 * the check, whose statement is the function `authz_check`: the same walk). $1 application, $2–$4 the object#relation.
 */
const DOWNWARD = `with recursive reach(t, i, r, d) as (
    select $2::text, $3::text, $4::text, 0
    union
    select x.subject_type, x.subject_id, x.subject_relation, reach.d + 1
      from reach join authz_tuples x
        on x.application_id = $1 and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
     where reach.d < $limit and x.subject_relation <> ''
  )`;

/**
 * The check: is the subject ($5–$7; $8 its user id when it is a user) in object#relation? The statement is the PL/pgSQL
 * function `authz_check` (migration `authz_check_function`): the walk down (`DOWNWARD`), then allowed when the subject
 * is a reached userset itself, or a direct subject of a reached userset, or a member (with the role, for `#<role>`) of
 * a reached organization userset; `exceeded` as `EXCEEDED`. PL/pgSQL plans its statements once per server connection
 * and keeps the plans, so the recursive statement is not planned per call even when the call is an unnamed statement
 * (behind a transaction-mode pooler); the call itself costs next to nothing to plan.
 */
const CHECK_ARGS = `$1, $2::text, $3::text, $4::text, $5::text, $6::text, $7::text, $8::uuid, ${MAX_DEPTH + 1}`;
const CHECK = positional(`select allowed, exceeded from authz_check(${CHECK_ARGS})`);

/**
 * The check that also checks the secret key ($9 its hash, $10 the scopes granting `authz:read`; $1 the presented
 * application), `authz_keyed_check`: one round trip on the hot path. The function reads the key's row as
 * `secretKeyInStatement` does and runs the check only for a live key with the scope; the row (all null when the
 * application does not exist) comes back beside the answer and is judged before the answer is used.
 */
const KEYED_CHECK = positional(`select * from authz_keyed_check(${CHECK_ARGS}, $9, $10)`);

export async function check(
  ctx: SecretKeyInStatementContext,
  input: { object: string; relation: string; subject: string; consistency?: { mode: string; token?: string } },
) {
  const key = ctx.keyInStatement;
  // A consistency token is judged after the key, which then needs its own query first (not the hot path); so does a
  // bearer that is no secret key (a console operator's token).
  const keyFirst = input.consistency?.mode === 'at_least_as_fresh' || key.notAKey;
  if (keyFirst) {
    await key.authenticate();
    await honourConsistency(ctx, input.consistency);
  }
  const object = parseObject(input.object);
  const subject = parseSubject(input.subject);
  const values = [
    key.applicationId,
    object.type,
    object.id,
    input.relation,
    subject.type,
    subject.id,
    subject.relation,
    directUser(subject),
  ];
  const row = onlyRow(
    // allowed and exceeded are null only beside a key that `accept` refuses.
    await preparedQuery<({ id: null } | PresentedKeyRow) & { allowed: boolean | null; exceeded: boolean | null }>(
      ctx.em,
      keyFirst ? 'authz_check' : 'authz_keyed_check',
      keyFirst ? CHECK.sql : KEYED_CHECK.sql,
      keyFirst ? CHECK.params(values) : KEYED_CHECK.params([...values, key.hash, key.scopes]),
    ),
  );
  if (!keyFirst) await key.accept(row.id === null ? undefined : row);
  if (!row.allowed && row.exceeded) throw depthExceeded();
  return { allowed: row.allowed === true };
}

const UUID_TEXT = `'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'`;

/** Every userset reached with its direct subjects; an organization userset lists its members as users. */
const EXPAND = positional(
  `${DOWNWARD}, nodes as (select t, i, r, min(d) as d from reach group by t, i, r)
  select n.t, n.i, n.r, n.d,
    array(select x.subject_type || ':' || x.subject_id || case when x.subject_relation = '' then '' else '#' || x.subject_relation end
            from authz_tuples x
           where x.application_id = $1 and x.object_type = n.t and x.object_id = n.i and x.relation = n.r
           order by 1) ||
    array(select 'user:' || m.user_id from organization_members m
           where n.t = 'organization' and n.i ~ ${UUID_TEXT}
             and m.organization_id = (case when n.i ~ ${UUID_TEXT} then n.i::uuid end)
             and m.application_id = $1 and (n.r = 'member' or m.role = n.r)
           order by 1) as subjects,
    ${EXCEEDED} as exceeded
    from nodes n where n.d < $limit order by n.d, n.t, n.i, n.r`.replaceAll('$limit', String(MAX_DEPTH + 1)),
);

export async function expand(
  ctx: TenantContext,
  input: { object: string; relation: string; consistency?: { mode: string; token?: string } },
) {
  await honourConsistency(ctx, input.consistency);
  const object = parseObject(input.object);
  const rows = await ctx.em.execute<Array<{ t: string; i: string; r: string; d: number; subjects: string[]; exceeded: boolean }>>(
    EXPAND.sql,
    EXPAND.params([ctx.application.id, object.type, object.id, input.relation]),
  );
  if (rows.some((row) => row.exceeded)) throw depthExceeded();
  return {
    object: input.object,
    relation: input.relation,
    usersets: rows.map((row) => ({ userset: `${row.t}:${row.i}#${row.r}`, depth: Number(row.d), subjects: row.subjects })),
  };
}

/**
 * Lookup walks up: from the subject ($2–$4; for a user also the organization usersets of their memberships, $5) to
 * every userset whose subjects contain it, then keeps those of the namespace ($6) and relation ($7). A user's direct
 * tuples are one hop (as in check), so the walk follows one hop more than check's subject-set hops.
 */
const LOOKUP = positional(
  `with recursive reach(t, i, r, d) as (
    select $2::text, $3::text, $4::text, 0
    union
    select 'organization', m.organization_id::text, role.r, 1
      from organization_members m cross join lateral (values ('member'::text), (m.role::text)) as role(r)
     where m.user_id = $5::uuid and m.application_id = $1
    union
    select x.object_type, x.object_id, x.relation, reach.d + 1
      from reach join authz_tuples x
        on x.application_id = $1 and x.subject_type = reach.t and x.subject_id = reach.i and x.subject_relation = reach.r
     where reach.d < $limit
  ), found as (select distinct i from reach where t = $6::text and r = $7::text and d < $limit)
  select (select count(*)::int from found) as total,
         (select coalesce(json_agg(p.i order by p.i), '[]') from (select i from found order by i limit $8 offset $9) p) as page,
         ${EXCEEDED} as exceeded`.replaceAll('$limit', String(MAX_DEPTH + 2)),
);

export async function lookup(
  ctx: TenantContext,
  input: PageQuery & { subject: string; relation: string; namespace: string; consistency?: { mode: string; token?: string } },
) {
  await honourConsistency(ctx, input.consistency);
  const subject = parseSubject(input.subject);
  const params = LOOKUP.params([
    ctx.application.id,
    subject.type,
    subject.id,
    subject.relation,
    directUser(subject),
    input.namespace,
    input.relation,
    input.limit,
    input.offset,
  ]);
  const row = onlyRow(await ctx.em.execute<Array<{ total: number; page: string[]; exceeded: boolean }>>(LOOKUP.sql, params));
  if (row.exceeded) throw depthExceeded();
  return {
    objects: row.page.map((id) => `${input.namespace}:${id}`),
    total: row.total,
    limit: input.limit,
    offset: input.offset,
  };
}

const TUPLE_COLUMNS = 'x.object_type, x.object_id, x.relation, x.subject_type, x.subject_id, x.subject_relation, x.created_at';

/** A page of tuples newest first and its total, in one statement (`where` over `x`, `$1` the application). */
async function tuplePage(em: EntityManager, name: string, where: string, values: unknown[], page: PageQuery) {
  const statement = positional(
    `select (select count(*)::int from authz_tuples x where ${where}) as total,
            (select coalesce(json_agg(p order by p.created_at desc, p.id desc), '[]') from (
               select x.id, ${TUPLE_COLUMNS} from authz_tuples x where ${where}
                order by x.created_at desc, x.id desc limit $${values.length + 1} offset $${values.length + 2}) p) as page`,
  );
  const row = onlyRow(
    await preparedQuery<{ total: number; page: TupleRow[] }>(
      em,
      name,
      statement.sql,
      statement.params([...values, page.limit, page.offset]),
    ),
  );
  return { rows: row.page.map(toRelationshipTuple), total: row.total };
}

/** `GET /v1/authz/tuples`: every filter is optional; newest first. */
export async function listTuples(
  ctx: TenantContext,
  input: PageQuery & { object?: string; namespace?: string; relation?: string; subject?: string },
) {
  const object = input.object ? parseObject(input.object) : null;
  const subject = input.subject ? parseSubject(input.subject) : null;
  if (object && input.namespace && object.type !== input.namespace) {
    return { tuples: [], total: 0, limit: input.limit, offset: input.offset };
  }
  // Absent filters are null parameters, so one prepared statement serves every combination.
  const where = `x.application_id = $1 and ($2::text is null or x.object_type = $2::text) and ($3::text is null or x.object_id = $3::text)
    and ($4::text is null or x.relation = $4::text) and ($5::text is null or x.subject_type = $5::text)
    and ($6::text is null or x.subject_id = $6::text) and ($7::text is null or x.subject_relation = $7::text)`;
  const { rows, total } = await tuplePage(
    ctx.em,
    'authz_tuples_page',
    where,
    [
      ctx.application.id,
      object?.type ?? input.namespace ?? null,
      object?.id ?? null,
      input.relation ?? null,
      subject?.type ?? null,
      subject?.id ?? null,
      subject?.relation ?? null,
    ],
    input,
  );
  return { tuples: rows, total, limit: input.limit, offset: input.offset };
}

/** S11: the tuples whose subject is the signed-in user, newest first, optionally of one object namespace. */
export async function listRelations(ctx: SignedInContext, input: PageQuery & { namespace?: string }) {
  const where = `x.application_id = $1 and x.subject_type = 'user' and x.subject_id = $2::text and x.subject_relation = ''
    and ($3::text is null or x.object_type = $3::text)`;
  const { rows, total } = await tuplePage(
    ctx.em,
    'authz_relations_page',
    where,
    [ctx.application.id, ctx.user.id, input.namespace ?? null],
    input,
  );
  return { relations: rows, total, limit: input.limit, offset: input.offset };
}

/**
 * Merge: `user:<source>` becomes `user:<target>` wherever it stands (subject, subject set, object). A tuple the target
 * already has is dropped instead of duplicated.
 */
export const mergeAuthzTuples: MergeStep = async (em, { applicationId, sourceUserId, targetUserId }) => {
  const rewrite = (column: 'subject' | 'object', same: string): [drop: string, update: string] => [
    `delete from authz_tuples s where s.application_id = ? and s.${column}_type = 'user' and s.${column}_id = ?
        and exists (select 1 from authz_tuples t where t.application_id = s.application_id and ${same}
                      and t.${column}_type = 'user' and t.${column}_id = ?)`,
    `update authz_tuples set ${column}_id = ? where application_id = ? and ${column}_type = 'user' and ${column}_id = ?`,
  ];
  const sameSubject =
    't.object_type = s.object_type and t.object_id = s.object_id and t.relation = s.relation and t.subject_relation = s.subject_relation';
  const sameObject =
    't.relation = s.relation and t.subject_type = s.subject_type and t.subject_id = s.subject_id and t.subject_relation = s.subject_relation';
  for (const [column, same] of [
    ['subject', sameSubject],
    ['object', sameObject],
  ] as const) {
    const [drop, update] = rewrite(column, same);
    await em.execute(drop, [applicationId, sourceUserId, targetUserId]);
    await em.execute(update, [targetUserId, applicationId, sourceUserId]);
  }
};

/** Deletion: the user's tuples go with the user (as subject, subject set or object). */
export const deleteAuthzTuples: DeleteStep = async (em, user) => {
  await em.execute(
    `delete from authz_tuples where application_id = ?
        and ((subject_type = 'user' and subject_id = ?) or (object_type = 'user' and object_id = ?))`,
    [user.application, user.id, user.id],
  );
};
