import { Migration } from '@mikro-orm/migrations';

/**
 * The authorization check as PL/pgSQL functions. PL/pgSQL prepares the statements of a function once per server
 * connection and keeps their plans, so the recursive check is planned once per backend whether or not the client names
 * its statements: behind a transaction-mode pooler the call is an unnamed statement that costs next to nothing to
 * plan, and the walk inside it runs on the plan cached by whichever backend the pooler lends.
 *
 * `authz_check`: the check of authz.service.ts (the walk down from object#relation; allowed when the subject is a
 * reached userset, a direct subject of one, or a member of a reached organization userset; `exceeded` when a userset
 * is first reached at `in_limit`, one hop beyond the deepest followed: MAX_DEPTH + 1, passed by the service).
 *
 * `authz_keyed_check`: the hot path's check with the secret key checked in it — the application and the key of
 * SHA-256 `in_secret_hash` in it, as `secretKeyRowSql` of api-keys reads them (the same columns, all null when the
 * application does not exist), and the check only for a live key holding one of `in_scopes` (comma-separated), as
 * `secretKeyInStatement`'s condition: a caller without a valid key learns nothing from it. The service judges the key's
 * columns (`keyInStatement.accept`) before it uses the answer.
 */
export class Migration20261128094500_authz_check_function extends Migration {
  override name = 'Migration20261128094500_authz_check_function';

  override up(): void | Promise<void> {
    this.addSql(`create function "authz_check"(
  in_application uuid, in_object_type text, in_object_id text, in_relation text,
  in_subject_type text, in_subject_id text, in_subject_relation text, in_user uuid, in_limit int,
  out allowed boolean, out exceeded boolean)
language plpgsql stable as $body$
begin
  with recursive reach(t, i, r, d) as (
    select in_object_type, in_object_id, in_relation, 0
    union
    select x.subject_type, x.subject_id, x.subject_relation, reach.d + 1
      from reach join authz_tuples x
        on x.application_id = in_application and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
     where reach.d < in_limit and x.subject_relation <> ''
  )
  select (
      exists (select 1 from reach where reach.d < in_limit and reach.t = in_subject_type and reach.i = in_subject_id
                and reach.r = in_subject_relation)
   or exists (select 1 from reach join authz_tuples x
                on x.application_id = in_application and x.object_type = reach.t and x.object_id = reach.i and x.relation = reach.r
               where reach.d < in_limit and x.subject_type = in_subject_type and x.subject_id = in_subject_id
                 and x.subject_relation = in_subject_relation)
   or exists (select 1 from organization_members m join reach
                on reach.t = 'organization' and reach.i = m.organization_id::text and (reach.r = 'member' or reach.r = m.role)
               where m.user_id = in_user and m.application_id = in_application and reach.d < in_limit)
    ),
    exists (select 1 from reach a where a.d = in_limit and not exists (
      select 1 from reach b where b.t = a.t and b.i = a.i and b.r = a.r and b.d < in_limit))
    into allowed, exceeded;
end
$body$;`);
    this.addSql(`create function "authz_keyed_check"(
  in_application uuid, in_object_type text, in_object_id text, in_relation text,
  in_subject_type text, in_subject_id text, in_subject_relation text, in_user uuid, in_limit int,
  in_secret_hash text, in_scopes text,
  out id uuid, out key_id uuid, out key_name varchar, out key_scopes jsonb, out key_prefix varchar,
  out key_secret_hash varchar, out key_created_at timestamptz, out key_last_used_at timestamptz,
  out key_revoked_at timestamptz, out allowed boolean, out exceeded boolean)
language plpgsql stable as $body$
begin
  select a.id, k.id, k.name, k.scopes, k.prefix, k.secret_hash, k.created_at, k.last_used_at, k.revoked_at
    into id, key_id, key_name, key_scopes, key_prefix, key_secret_hash, key_created_at, key_last_used_at, key_revoked_at
    from applications a left join api_keys k on k.secret_hash = in_secret_hash and k.application_id = a.id
   where a.id = in_application;
  if key_id is not null and key_revoked_at is null and jsonb_exists_any(key_scopes, string_to_array(in_scopes, ',')) then
    select c.allowed, c.exceeded into allowed, exceeded
      from authz_check(in_application, in_object_type, in_object_id, in_relation, in_subject_type, in_subject_id,
                       in_subject_relation, in_user, in_limit) as c;
  end if;
end
$body$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop function if exists "authz_keyed_check"(uuid, text, text, text, text, text, text, uuid, int, text, text);`);
    this.addSql(`drop function if exists "authz_check"(uuid, text, text, text, text, text, text, uuid, int);`);
  }
}
