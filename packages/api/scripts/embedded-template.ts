/**
 * `npm run embedded-template`: builds the migrated template a fresh embedded database is created from
 * (src/db/embedded-template.ts). Run by `npm ci` / `npm install`; a failure only warns: without a template a fresh
 * data directory is created the slow way (an initdb, then every migration).
 */
import { createOrm, migrate, migrationDigests, openPglite, writeEmbeddedTemplate } from '../src/index.ts';

const started = performance.now();
try {
  const pglite = await openPglite();
  const orm = await createOrm({ kind: 'pglite', pglite });
  const applied = await migrate(orm);
  await orm.close();
  await pglite.query('checkpoint');
  const tarball = await pglite.dumpDataDir('gzip');
  await pglite.close();
  // The digests name exactly the migrations this run applied (all of them: the database was empty).
  const all = migrationDigests();
  if (applied.length !== all.length) throw new Error(`applied ${applied.length} of ${all.length} migrations`);
  await writeEmbeddedTemplate(tarball, all);
  process.stderr.write(
    `Embedded database template: ${all.length} migrations, ${(tarball.size / 1e6).toFixed(1)} MB, ${((performance.now() - started) / 1000).toFixed(1)} s\n`,
  );
} catch (error) {
  process.stderr.write(`warning: no embedded database template (a fresh data directory will take longer): ${error}\n`);
}
