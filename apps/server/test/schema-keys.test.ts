import { describe, expect, it } from 'vitest';
import { sql } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * Past one PostgreSQL primary, Gatehouse's data is distributed by application (docs/scaling.md): every row belongs to
 * one application, and every key that must be unique is unique within one application, so a shard holding some
 * applications can enforce it alone. This checks the schema the migrations build, table by table:
 *
 * - a table belongs to an application through its own `application_id` column, or through a foreign key to a table
 *   that does (its parent row is one application's: a membership through its organization);
 * - each of its unique keys (the primary key included) contains `application_id` or such a parent key, or consists of
 *   values unique by construction: a random UUIDv7 `id` (a distributed primary key becomes `(application_id, id)`,
 *   a mechanical change), or the SHA-256 of a random secret (`…_hash`: a collision across shards is as likely as
 *   guessing the secret, so each shard enforcing its own rows is enough);
 * - anything else is listed below with the reason it is global, and a table nobody can place fails this test.
 */
const GLOBAL_TABLES: Record<string, string> = {
  applications: 'the distribution key itself: a row per application, its `id` is the application id',
  mikro_orm_migrations: 'schema metadata: the same on every shard (a reference table)',
  rate_limits:
    'counters keyed by text that carries the application where a limit is per application, by client address where it ' +
    'is per address across applications; kept on every shard for its own requests, or in Redis (GATEHOUSE_REDIS_URL)',
  idempotency_keys:
    "scoped by `scope`, which is `app:<application id>` for a tenant's call and `operator` for the operator's; an " +
    "operator's replay is answered by the shard that holds the application it created",
};

/** Unique keys that hold across applications on purpose. */
const GLOBAL_KEYS: Record<string, string> = {
  custom_domains_domain_unique:
    'a host name can point at one application only, whatever shard holds it: a small lookup table kept on every ' +
    'shard (a reference table) decides, as the custom-domain lookup by host does before any application is known',
};

interface Column {
  table: string;
  column: string;
}

describe('every table is keyed by application, or says why it is global', () => {
  const suite = serverSuite({ smtp: false });

  it('holds for the schema the migrations build', async () => {
    const tables: Array<{ table: string }> = await sql(
      suite.server,
      `select c.relname as "table" from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p') order by 1`,
    );
    const columns: Column[] = await sql(
      suite.server,
      `select c.relname as "table", a.attname as "column" from pg_attribute a
         join pg_class c on c.oid = a.attrelid join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and c.relkind in ('r', 'p') and a.attnum > 0 and not a.attisdropped`,
    );
    const foreignKeys: Array<{ table: string; column: string; parent: string }> = await sql(
      suite.server,
      `select c.relname as "table", a.attname as "column", p.relname as parent from pg_constraint k
         join pg_class c on c.oid = k.conrelid join pg_class p on p.oid = k.confrelid
         join pg_attribute a on a.attrelid = k.conrelid and a.attnum = k.conkey[1]
        where k.contype = 'f' and array_length(k.conkey, 1) = 1`,
    );
    const uniqueKeys: Array<{ table: string; index: string; columns: string[] }> = await sql(
      suite.server,
      `select c.relname as "table", i.relname as "index",
              array(select a.attname::text from unnest(x.indkey) with ordinality k(attnum, n)
                      join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as columns
         from pg_index x join pg_class c on c.oid = x.indrelid join pg_class i on i.oid = x.indexrelid
         join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = 'public' and x.indisunique`,
    );

    const hasApplication = new Set(columns.filter((c) => c.column === 'application_id').map((c) => c.table));
    // A parent key: a foreign key to a table of one application (directly, or through its own parent).
    const owned = new Set(hasApplication);
    for (let grew = true; grew; ) {
      grew = false;
      for (const fk of foreignKeys) {
        if (!owned.has(fk.table) && owned.has(fk.parent)) {
          owned.add(fk.table);
          grew = true;
        }
      }
    }
    const parentKeys = new Set(foreignKeys.filter((fk) => owned.has(fk.parent)).map((fk) => `${fk.table}.${fk.column}`));

    const problems: string[] = [];
    for (const { table } of tables) {
      if (table in GLOBAL_TABLES) continue;
      if (!owned.has(table)) problems.push(`${table}: no application_id and no foreign key to a table of one application`);
    }
    for (const key of uniqueKeys) {
      if (key.table in GLOBAL_TABLES || key.index in GLOBAL_KEYS) continue;
      const scoped = key.columns.some((c) => c === 'application_id' || parentKeys.has(`${key.table}.${c}`));
      const uniqueByConstruction = key.columns.every((c) => c === 'id' || c.endsWith('_hash'));
      if (!scoped && !uniqueByConstruction) {
        problems.push(`${key.table}: unique key ${key.index} (${key.columns.join(', ')}) holds across applications`);
      }
    }
    expect(problems).toEqual([]);
    // The lists above name only what exists: a reason for a table or key that is gone goes too.
    const names = new Set(tables.map((t) => t.table));
    expect(Object.keys(GLOBAL_TABLES).filter((t) => !names.has(t))).toEqual([]);
    const indexes = new Set(uniqueKeys.map((k) => k.index));
    expect(Object.keys(GLOBAL_KEYS).filter((k) => !indexes.has(k))).toEqual([]);
  });
});
