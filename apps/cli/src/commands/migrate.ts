import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';

/**
 * The database the server would use, by the server's own rule (`databaseFromEnv`); the embedded one is locked for
 * this process (a running server holding it makes this fail before anything is opened).
 */
async function serverDatabase() {
  const { databaseFromEnv, lockEmbeddedDatabase, readEnv } = await import('@gatehouse/server/config');
  let env: ReturnType<typeof readEnv>;
  try {
    env = readEnv();
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const found = await databaseFromEnv(env);
  lockEmbeddedDatabase(found.database);
  return found;
}

export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description(
      "Apply pending database migrations with the server's own code (DATABASE_URL, else PGlite in GATEHOUSE_DATA_DIR); needs @gatehouse/server installed next to the CLI (an optional peer dependency)",
    )
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
