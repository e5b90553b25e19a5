import { createOrm, migrate, type Orm, pendingMigrations } from '@gatehouse/api';
import { describe, expect, inject, it } from 'vitest';
import { serverDatabaseUrl } from './helpers/processes.ts';
import { startServer } from './helpers/server.ts';

describe('committed migrations', () => {
  it('build exactly the schema the entities describe (no drift)', async () => {
    const server = await startServer();
    try {
      const sql = await server.server.orm.schema.getUpdateSchemaSQL({ wrap: false });
      expect(sql.trim()).toBe('');
    } finally {
      await server.close();
    }
  });

  it('run once even when several processes start together', async () => {
    const base = inject('databaseUrl');
    if (!base) {
      // Embedded PGlite belongs to one process; there, a second run must simply find nothing to do.
      const server = await startServer();
      try {
        expect(await migrate(server.server.orm)).toEqual([]);
      } finally {
        await server.close();
      }
      return;
    }
    const admin = await createOrm({ kind: 'postgres', url: base, poolSize: 1 });
    const name = `gatehouse_migrate_${process.pid}_${Date.now()}`;
    await admin.em.getConnection().execute(`create database ${name}`);
    // Through the run's transaction-mode pooler when there is one: the migration lock must hold there too.
    const served = serverDatabaseUrl(name);
    const orms: Orm[] = [];
    try {
      for (let i = 0; i < 3; i++) orms.push(await createOrm({ ...served, poolSize: 2 }));
      // A new database has no migrations table: every migration is pending.
      const pending = await pendingMigrations(orms[0]!);
      expect(pending).toBeGreaterThan(0);
      const applied = await Promise.all(orms.map((orm) => migrate(orm)));
      expect(applied.filter((names) => names.length > 0)).toHaveLength(1);
      const rows = await orms[0]!.em.getConnection().execute('select name from mikro_orm_migrations');
      expect(rows.length).toBe(applied.find((names) => names.length > 0)!.length);
      expect(rows.length).toBe(pending);
      expect(await pendingMigrations(orms[1]!)).toBe(0);
    } finally {
      await Promise.all(orms.map((orm) => orm.close()));
      await admin.em.getConnection().execute(`drop database if exists ${name} with (force)`);
      await admin.close();
    }
  });

  it('are counted from their table: a record missing is a migration pending, and /readyz answers 503 until it is back', async () => {
    const server = await startServer();
    const connection = server.server.orm.em.getConnection();
    try {
      expect(await pendingMigrations(server.server.orm)).toBe(0);
      const [last] = await connection.execute<{ id: number; name: string }[]>(
        'select id, name from mikro_orm_migrations order by id desc limit 1',
      );
      if (!last) throw new Error('no migration recorded');
      await connection.execute('delete from mikro_orm_migrations where id = ?', [last.id]);
      try {
        expect(await pendingMigrations(server.server.orm)).toBe(1);
        expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
      } finally {
        await connection.execute('insert into mikro_orm_migrations (id, name) values (?, ?)', [last.id, last.name]);
      }
      expect(await pendingMigrations(server.server.orm)).toBe(0);
      expect((await fetch(`${server.url}/readyz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
