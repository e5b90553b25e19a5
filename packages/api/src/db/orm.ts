import { PGlite } from '@electric-sql/pglite';
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm';
import { MikroORM, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PgliteDriver } from '@mikro-orm/pglite';
import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';
import { type AbstractSqlDriver, createPostgreSqlTypeParsers, type SqlEntityManager } from '@mikro-orm/sql';
import pg from 'pg';
import array from 'postgres-array';
import { migrationsList } from './migrations/index.ts';

export type DatabaseConfig =
  | { kind: 'postgres'; url: string; poolSize?: number }
  /** Embedded PostgreSQL: a directory to persist in, or an instance the caller owns (tests restore snapshots). */
  | { kind: 'pglite'; dataDir: string }
  | { kind: 'pglite'; pglite: PGlite };

/** Both drivers (PostgreSQL, PGlite) are SQL drivers: their entity managers run SQL (`execute`, query builders). */
export type Orm = MikroORM<AbstractSqlDriver>;

/** The PostgreSQL extensions the migrations use, loaded into the embedded database (pg_trgm: literal search). */
const PGLITE_EXTENSIONS = { pg_trgm };
export type EntityManager = SqlEntityManager;

/** `entities`: every table's entity, from the module list of the composition root (`src/modules.ts`): the kernel knows no module. */
function ormOptions(db: DatabaseConfig, entities: Options['entities']): Partial<Options<AbstractSqlDriver>> {
  const common = {
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    // Identity maps are per request (forked managers); nothing is shared between requests.
    forceUtcTimezone: true,
    migrations: { migrationsList, tableName: 'mikro_orm_migrations', snapshot: false, silent: true },
    debug: false,
  } satisfies Partial<Options>;
  if (db.kind === 'postgres') {
    return { ...common, driver: PostgreSqlDriver, clientUrl: db.url, pool: { max: db.poolSize ?? 20 } };
  }
  if ('pglite' in db) {
    return { ...common, driver: PgliteDriver, dbName: 'gatehouse', driverOptions: { pglite: db.pglite } };
  }
  return { ...common, driver: PgliteDriver, dbName: db.dataDir, driverOptions: { extensions: PGLITE_EXTENSIONS } };
}

export async function openOrm(db: DatabaseConfig, entities: Options['entities']): Promise<Orm> {
  return MikroORM.init<AbstractSqlDriver>(ormOptions(db, entities));
}

/** An arbitrary constant: the advisory lock that serializes migrations across processes. */
const MIGRATION_LOCK = 4_711_2026;

/**
 * Applies every committed migration that has not run yet. On PostgreSQL, several processes starting at once take
 * turns under an advisory lock (held on a connection of its own), so each migration runs exactly once.
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const url = orm.config.get('clientUrl');
  if (!url || orm.config.get('driver') !== PostgreSqlDriver) return (await orm.migrator.up()).map((m) => m.name);
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    return (await orm.migrator.up()).map((m) => m.name);
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await lock.end();
  }
}

export async function pendingMigrations(orm: Orm): Promise<number> {
  return (await orm.migrator.getPending()).length;
}

/**
 * An embedded database the caller owns (tests restore a migrated snapshot with `loadDataDir`), in memory or in
 * `dataDir`, with the same type parsers MikroORM gives the instances it creates itself.
 */
export async function openPglite(loadDataDir?: Blob, dataDir?: string): Promise<PGlite> {
  return PGlite.create({
    loadDataDir,
    dataDir,
    extensions: PGLITE_EXTENSIONS,
    parsers: createPostgreSqlTypeParsers((s) => array.parse(s)),
  });
}

const nativePools = new WeakMap<object, Promise<pg.Pool | null>>();

/** PostgreSQL's pool behind MikroORM's connection, or null for the embedded database (which has no pool). */
function nativePool(em: EntityManager): Promise<pg.Pool | null> {
  const connection = em.getConnection();
  let pool = nativePools.get(connection);
  if (!pool) {
    pool = connection instanceof PostgreSqlConnection ? connection.getNativeClient() : Promise.resolve(null);
    nativePools.set(connection, pool);
  }
  return pool;
}

/**
 * One statement of a hot path, outside any transaction: on PostgreSQL a named prepared statement (parsed and planned
 * once per pooled connection, then only bound and executed), elsewhere a plain execute. `sql` uses `?` placeholders
 * and must contain no other `?`. Inside a transaction it runs on the transaction's connection, unprepared.
 */
export async function preparedQuery<T extends object>(
  em: EntityManager,
  name: string,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const pool = em.isInTransaction() ? null : await nativePool(em);
  if (!pool) return em.execute<T[]>(sql, params);
  const { rows } = await pool.query<T>({ name, text: numbered(name, sql), values: params });
  return rows;
}

/** The row of a statement that always answers exactly one (an aggregate, or `from (select 1) left join …`). */
export function onlyRow<T>(rows: readonly T[]): T {
  const [row] = rows;
  if (row === undefined) throw new Error('The statement answered no row');
  return row;
}

const numberedTexts = new Map<string, { sql: string; text: string }>();

/** `sql` with its `?` placeholders as PostgreSQL's `$1, $2…`, worked out once per statement name. */
function numbered(name: string, sql: string): string {
  let entry = numberedTexts.get(name);
  if (entry?.sql !== sql) {
    let n = 0;
    entry = { sql, text: sql.replace(/\?/g, () => `$${++n}`) };
    numberedTexts.set(name, entry);
  }
  return entry.text;
}
