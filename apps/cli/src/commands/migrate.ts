import { resolve } from 'node:path';
import type { DatabaseConfig } from '@gatehouse/api';
import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { present } from '../output.tsx';

/**
 * The database the server would use, from the same validated environment (`readEnv`) as apps/server/src/main.ts:
 * PostgreSQL from DATABASE_URL, else embedded PGlite in <GATEHOUSE_DATA_DIR>/db.
 * TODO: replace with the helper the server package is to export, so the rule lives in one place.
 */
async function serverDatabase(): Promise<{ database: DatabaseConfig; where: string }> {
  const { readEnv } = await import('@gatehouse/server');
  let env: ReturnType<typeof readEnv>;
  try {
    env = readEnv();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  if (env.DATABASE_URL) return { database: { kind: 'postgres', url: env.DATABASE_URL }, where: 'PostgreSQL (DATABASE_URL)' };
  const dataDir = resolve(env.GATEHOUSE_DATA_DIR, 'db');
  return { database: { kind: 'pglite', dataDir }, where: `embedded PGlite in ${dataDir}` };
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description("Apply pending database migrations with the server's own code (DATABASE_URL, else PGlite in GATEHOUSE_DATA_DIR)")
    .action(async (_options, command: Command) => {
      const { database, where } = await serverDatabase();
      // The ORM and its drivers load only for this command.
      const { createOrm, migrate } = await import('@gatehouse/api');
      await present(
        command,
        `Applying migrations to ${where}`,
        async () => {
          const orm = await createOrm(database);
          try {
            return { database: where, applied: await migrate(orm) };
          } finally {
            await orm.close();
          }
        },
        ({ applied }) => ({
          kind: 'message',
          text: applied.length
            ? `Applied ${applied.length} migration(s) to ${where}: ${applied.join(', ')}`
            : `Database is up to date (${where}).`,
        }),
      );
    });
}
