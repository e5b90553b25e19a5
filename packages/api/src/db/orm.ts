import type { PGlite } from '@electric-sql/pglite';
import { MikroORM, type Options, TableNotFoundException } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';
import { type AbstractSqlDriver, createPostgreSqlTypeParsers, type SqlEntityManager } from '@mikro-orm/sql';
import pg from 'pg';
import array from 'postgres-array';
import { embeddedTemplateFor } from './embedded-template.ts';
import { migrationsList } from './migrations/index.ts';

/**
 * How the server reaches PostgreSQL. `direct` (the default): a connection is the server's for as long as it is in the
 * pool, so hot statements are named and prepared once per connection. `transaction`: a pooler in transaction mode
 * (PgBouncer, RDS Proxy, a platform's pooler) hands each transaction any server connection, so nothing may outlive
 * a transaction: every statement is unnamed (parsed and planned each time) and no session state is kept.
 */
export type DatabasePooler = 'direct' | 'transaction';

export type DatabaseConfig =
  | { kind: 'postgres'; url: string; poolSize?: number; pooler?: DatabasePooler }
  /** Embedded PostgreSQL: a directory to persist in, or an instance the caller owns (tests restore snapshots). */
  | { kind: 'pglite'; dataDir: string }
  | { kind: 'pglite'; pglite: PGlite };

/** Both drivers (PostgreSQL, PGlite) are SQL drivers: their entity managers run SQL (`execute`, query builders). */
export type Orm = MikroORM<AbstractSqlDriver>;

/**
 * The embedded database's packages (PGlite, its pg_trgm extension, MikroORM's driver for it), loaded when an embedded
 * database is opened: a server on PostgreSQL never loads them.
 */
async function embedded() {
  const [{ PGlite }, { pg_trgm }, { PgliteDriver }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm'),
    import('@mikro-orm/pglite'),
  ]);
  return {
    PGlite,
    PgliteDriver,
    /** The PostgreSQL extensions the migrations use, loaded into the embedded database (pg_trgm: literal search). */
    extensions: { pg_trgm },
    /**
     * The embedded server's start parameters: PGlite's own, with a 16 MB buffer cache instead of 128 MB. One process
     * and one connection read a small database; the cache is memory the process holds for good once touched (about
     * 115 MB of resident memory at idle). A cache size only: nothing about durability changes.
     */
    startParams: [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB'],
  };
}
type Embedded = Awaited<ReturnType<typeof embedded>>;
export type EntityManager = SqlEntityManager;

/** Where MikroORM's migrator records the migrations applied. */
const MIGRATIONS_TABLE = 'mikro_orm_migrations';

/** `entities`: every table's entity, from the module list of the composition root (`src/modules.ts`): the kernel knows no module. */
function ormOptions(
  db: DatabaseConfig,
  entities: Options['entities'],
  lib: Embedded | undefined,
  template?: Blob,
): Partial<Options<AbstractSqlDriver>> {
  const common = {
    entities,
    extensions: [Migrator],
    allowGlobalContext: false,
    // Identity maps are per request (forked managers); nothing is shared between requests.
    forceUtcTimezone: true,
    migrations: { migrationsList, tableName: MIGRATIONS_TABLE, snapshot: false, silent: true },
    // The SQL functions of hand-written migrations (authz_check, authz_keyed_check) are not MikroORM routines: the
    // schema diff leaves existing functions alone (it still creates declared routines; none are declared).
    schemaGenerator: { ignoreRoutines: true },
    debug: false,
  } satisfies Partial<Options>;
  if (db.kind === 'postgres') {
    return { ...common, driver: PostgreSqlDriver, clientUrl: db.url, pool: { max: db.poolSize ?? 20 } };
  }
  if (!lib) throw new Error('The embedded database needs its packages loaded');
  if ('pglite' in db) {
    return { ...common, driver: lib.PgliteDriver, dbName: 'gatehouse', driverOptions: { pglite: db.pglite } };
  }
  // A fresh data directory starts from the migrated template when there is one (embedded-template.ts).
  return {
    ...common,
    driver: lib.PgliteDriver,
    dbName: db.dataDir,
    driverOptions: {
      extensions: lib.extensions,
      startParams: lib.startParams,
      ...(template ? { loadDataDir: blobLike(template) } : {}),
    },
  };
}

/**
 * A Blob that survives MikroORM's copy of the driver options: a Blob's content lives in internal slots that a copy loses
 * (its `arrayBuffer()` then throws "Illegal invocation"); PGlite reads only `arrayBuffer()` and `type` of it.
 */
function blobLike(blob: Blob): Blob {
  const bytes = blob.arrayBuffer();
  // PGlite's loadDataDir reads the two members given here and nothing else of the Blob (dist: `r.arrayBuffer()`, `r.type`).
  return { type: blob.type, size: blob.size, arrayBuffer: () => bytes } as unknown as Blob;
}

/** The connections (MikroORM's, one per ORM) whose statements must stay unnamed: behind a transaction-mode pooler. */
const unnamedOnly = new WeakSet<object>();

export async function openOrm(db: DatabaseConfig, entities: Options['entities']): Promise<Orm> {
  const template = db.kind === 'pglite' && 'dataDir' in db ? await embeddedTemplateFor(db.dataDir) : undefined;
  const lib = db.kind === 'pglite' ? await embedded() : undefined;
  const orm = await MikroORM.init<AbstractSqlDriver>(ormOptions(db, entities, lib, template?.data));
  if (template) fromTemplate.set(orm, template.migrations);
  if (db.kind === 'postgres') {
    if (db.pooler === 'transaction') unnamedOnly.add(orm.em.getConnection());
    const pool = await nativePool(orm.em);
    if (pool) releaseEndedClients(pool);
  }
  return orm;
}

/**
 * Gives the pool back a connection that ended while checked out (the server crashed, failed over or ended it), which
 * the query builder under MikroORM (Kysely) would otherwise keep forever: when a transaction fails and its `rollback`
 * fails too, as it does on a dead connection, Kysely never releases that connection. Each such failure took one
 * connection of the pool for good; a failover under load took half of it, and a second could take the rest. The
 * connection is released with an error (the pool discards it) and later releases of it do nothing.
 */
function releaseEndedClients(pool: pg.Pool): void {
  const checkedOut = new Set<pg.PoolClient>();
  const watched = new WeakSet<pg.PoolClient>();
  pool.on('acquire', (client) => {
    checkedOut.add(client);
    if (watched.has(client)) return;
    watched.add(client);
    client.on('end', () => {
      if (!checkedOut.delete(client)) return;
      const release = client.release;
      client.release = () => undefined;
      release(new Error('The database connection ended while in use'));
    });
  });
  pool.on('release', (_error, client) => {
    checkedOut.delete(client);
  });
}

/** An arbitrary constant: the advisory lock that serializes migrations across processes. */
const MIGRATION_LOCK = 4_711_2026;

/**
 * Applies every committed migration that has not run yet. On PostgreSQL, several processes starting at once take
 * turns under an advisory lock held on a connection of its own, so each migration runs exactly once. The lock is
 * transaction-scoped: its holder keeps a transaction open while the migrations run (on the ORM's pool), then commits.
 * It needs no session, so it holds behind a transaction-mode pooler too (a session lock would stay on whichever
 * server connection the pooler lent, and its unlock could reach another). A process that finds the lock taken ends its
 * transaction and tries again a moment later rather than waiting inside it: behind a pooler, waiters holding server
 * connections could take the last one the holder's migrations need.
 */
/** The migrations a new embedded database received with its template: `migrate` reports them as applied, once. */
const fromTemplate = new WeakMap<Orm, string[]>();

/** Applies the pending migrations; answers the names of those this database received (from its template too). */
export async function migrate(orm: Orm): Promise<string[]> {
  const templated = fromTemplate.get(orm) ?? [];
  fromTemplate.delete(orm);
  // The usual start: nothing pending, seen in one statement (no lock, no migrator).
  if ((await pendingMigrations(orm)) === 0) return templated;
  const url = orm.config.get('clientUrl');
  if (!url || orm.config.get('driver') !== PostgreSqlDriver) {
    return [...templated, ...(await orm.migrator.up()).map((m) => m.name)];
  }
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    for (;;) {
      await lock.query('begin');
      const { rows } = await lock.query<{ taken: boolean }>('select pg_try_advisory_xact_lock($1) as taken', [MIGRATION_LOCK]);
      if (rows[0]?.taken) break;
      await lock.query('rollback');
      await new Promise((resolve) => setTimeout(resolve, 100 + Math.random() * 200));
    }
    const applied = (await orm.migrator.up()).map((m) => m.name);
    await lock.query('commit');
    return applied;
  } finally {
    await lock.end();
  }
}

/**
 * How many of the committed migrations (`migrationsList`) this database has not applied: one statement on the
 * migrator's table, none of the migrator's own reads (it checks for its table, then reads it through its query
 * builder). Every start asks, and so does every `/readyz`. All are pending while the table does not exist (a new
 * database). A name is compared as the migrator records it, without a `.js` or `.ts` extension.
 */
export async function pendingMigrations(orm: Orm): Promise<number> {
  let rows: { name: string }[];
  try {
    rows = await orm.em.fork().execute<{ name: string }[]>(`select name from ${MIGRATIONS_TABLE}`);
  } catch (error) {
    if (error instanceof TableNotFoundException) return migrationsList.length;
    throw error;
  }
  const applied = new Set(rows.map((row) => row.name.replace(/\.[jt]s$/, '')));
  return migrationsList.filter((migration) => !applied.has(migration.name)).length;
}

/**
 * An embedded database the caller owns (tests restore a migrated snapshot with `loadDataDir`), in memory or in
 * `dataDir`, with the same type parsers MikroORM gives the instances it creates itself.
 */
export async function openPglite(loadDataDir?: Blob, dataDir?: string): Promise<PGlite> {
  const lib = await embedded();
  return lib.PGlite.create({
    loadDataDir,
    dataDir,
    extensions: lib.extensions,
    parsers: createPostgreSqlTypeParsers((s) => array.parse(s)),
  });
}

const nativePools = new WeakMap<object, Promise<pg.Pool | null>>();

/**
 * A request's entity manager: a fork of the ORM's, made at its first use. A fork builds an identity map, a unit of
 * work and their helpers (about 3 µs, a thirtieth of a `/me`), and the hot paths never use them: they run
 * `preparedQuery`, which asks only whether a transaction is open and for the connection. Until something else is
 * asked, those two are answered for the fork to come — no transaction (a fork opens none by itself), the ORM's one
 * connection — and nothing is forked; anything else forks, and from then on every call goes to the fork, bound to it.
 * A proxy, not a getter on the context: tRPC's context merges read every property, and a getter would fork there.
 */
export function requestEntityManager(root: EntityManager): EntityManager {
  return new Proxy(root, new RequestEntityManager(root));
}

const notInTransaction = () => false;
/** The root's `getConnection`, bound once per ORM (its entity manager), not once per request. */
const rootConnections = new WeakMap<EntityManager, EntityManager['getConnection']>();

/** The proxy's handler: its state is the fork, once made, and the fork's methods as handed out (bound to it). */
class RequestEntityManager implements ProxyHandler<EntityManager> {
  readonly #root: EntityManager;
  #fork: { em: EntityManager; methods: Map<PropertyKey, unknown> } | undefined;

  constructor(root: EntityManager) {
    this.#root = root;
  }

  #forked() {
    this.#fork ??= { em: this.#root.fork(), methods: new Map() };
    return this.#fork;
  }

  get(root: EntityManager, key: PropertyKey) {
    if (!this.#fork && key === 'isInTransaction') return notInTransaction;
    if (!this.#fork && key === 'getConnection') {
      let getConnection = rootConnections.get(root);
      if (!getConnection) {
        getConnection = root.getConnection.bind(root);
        rootConnections.set(root, getConnection);
      }
      return getConnection;
    }
    const { em, methods } = this.#forked();
    const value: unknown = Reflect.get(em, key, em);
    if (typeof value !== 'function') return value;
    let method = methods.get(key);
    if (!method) {
      method = value.bind(em);
      methods.set(key, method);
    }
    return method;
  }

  set(_root: EntityManager, key: PropertyKey, value: unknown) {
    return Reflect.set(this.#forked().em, key, value);
  }

  has(_root: EntityManager, key: PropertyKey) {
    return Reflect.has(this.#forked().em, key);
  }
}

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
 * and must contain no other `?`. Inside a transaction it runs on the transaction's connection, unprepared. Behind a
 * transaction-mode pooler (`pooler: 'transaction'`) the statement goes unnamed: the same text in one round trip
 * (parse, bind, execute), planned each time, valid on whichever server connection the pooler lends. Its errors are
 * those `em.execute` throws (the driver's exceptions: a unique violation is `UniqueConstraintViolationException`).
 */
export async function preparedQuery<T extends object>(
  em: EntityManager,
  name: string,
  sql: string,
  params: unknown[],
): Promise<T[]> {
  const pool = em.isInTransaction() ? null : await nativePool(em);
  if (!pool) return em.execute<T[]>(sql, params);
  const text = numbered(name, sql);
  const named = !unnamedOnly.has(em.getConnection());
  try {
    const { rows } = await pool.query<T>(named ? { name, text, values: params } : { text, values: params });
    return rows;
  } catch (error) {
    // As `em.execute` throws them: a unique violation is MikroORM's `UniqueConstraintViolationException`, and so on.
    throw error instanceof Error ? em.getDriver().convertException(error) : error;
  }
}

/**
 * `$1`-style SQL (readable where a value recurs) as the `?` placeholders the drivers take, and the values in their
 * order: built once per statement text (at load for the fixed statements), applied per call.
 */
export function positional(sql: string): { sql: string; params: (values: unknown[]) => unknown[] } {
  const order: number[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    order.push(Number(n) - 1);
    return '?';
  });
  return { sql: text, params: (values) => order.map((i) => values[i]) };
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
