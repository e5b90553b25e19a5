import type { Command } from 'commander';
import { UsageError } from '../errors.ts';
import { present } from '../output.ts';
import { loadServerCode } from '../server-code.ts';

const MIGRATE_ELSEWHERE =
  'migrations run where the server is installed. The server applies pending migrations itself when it starts; ' +
  'to apply them without starting it, run `npm run migrate` in the Gatehouse repository (with the same DATABASE_URL ' +
  'or GATEHOUSE_DATA_DIR as the server)';

/**
 * The database the server would use, by the server's own rule (`databaseFromEnv`); the embedded one is locked for
 * this process (a running server holding it makes this fail before anything is opened).
 */
async function serverDatabase() {
  const { databaseFromEnv, lockEmbeddedDatabase, readEnv } = await loadServerCode(
    () => import('@gatehouse/server/config'),
    MIGRATE_ELSEWHERE,
  );
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
      "Apply pending database migrations with the server's own code (DATABASE_URL, else PGlite in GATEHOUSE_DATA_DIR); runs only where the server is installed (the Gatehouse repository; the published CLI says how to migrate instead)",
    )
    .action(async (_options, command: Command) => {
      const { database, where } = await serverDatabase();
      // The ORM and its drivers load only for this command.
      const { createOrm, migrate } = await loadServerCode(() => import('@gatehouse/api'), MIGRATE_ELSEWHERE);
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
