import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  createOrm,
  embeddedTemplateFor,
  isPrefixOf,
  migrate,
  migrationDigests,
  openPglite,
  writeEmbeddedTemplate,
} from '@gatehouse/api';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundling } from '../build.ts';

/**
 * The template a fresh embedded database is created from is a cache of the migrations, never a source: it is used
 * only while the migrations it holds are the first ones of the list, each unchanged, and the migrator applies the rest.
 */
describe('the embedded database template', () => {
  let dir: string;
  let tarball: Blob;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gatehouse-template-'));
    const pglite = await openPglite();
    const orm = await createOrm({ kind: 'pglite', pglite });
    await migrate(orm);
    await orm.close();
    tarball = await pglite.dumpDataDir('gzip');
    await pglite.close();
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('holds exactly the committed migrations, and a database made from it has nothing left to apply', async () => {
    const templates = join(dir, 'full');
    await writeEmbeddedTemplate(tarball, migrationDigests(), templates);
    const dataDir = join(dir, 'db-full');
    const template = await embeddedTemplateFor(dataDir, templates);
    expect(template?.migrations).toEqual(migrationDigests().map((m) => m.name));
    const pglite = await openPglite(template?.data, dataDir);
    const orm = await createOrm({ kind: 'pglite', pglite });
    try {
      const rows = await orm.em.getConnection().execute<{ name: string }[]>('select name from mikro_orm_migrations order by id');
      expect(rows.map((r) => r.name)).toEqual(migrationDigests().map((m) => m.name));
      expect(await migrate(orm)).toEqual([]);
      const sql = await orm.schema.getUpdateSchemaSQL({ wrap: false });
      expect(sql.trim()).toBe('');
    } finally {
      await orm.close();
      await pglite.close();
    }
    // A directory that already holds a database is never overwritten.
    expect(await embeddedTemplateFor(dataDir, templates)).toBeUndefined();
  });

  it('is used when it holds the first migrations only: the migrator applies the rest', () => {
    const all = migrationDigests();
    expect(isPrefixOf(all.slice(0, 3), all)).toBe(true);
    expect(isPrefixOf([], all)).toBe(true);
    expect(isPrefixOf(all, all)).toBe(true);
  });

  it('is ignored when a migration it holds was edited, removed, reordered or is unknown', async () => {
    const all = migrationDigests();
    const [first, second] = all;
    if (!first || !second) throw new Error('expected at least two migrations');
    const edited = [{ ...first, digest: `${first.digest}x` }, ...all.slice(1)];
    expect(isPrefixOf(edited, all)).toBe(false);
    expect(isPrefixOf([second, first], all)).toBe(false);
    expect(isPrefixOf([...all, { name: 'Migration29990101000000_future', digest: 'x' }], all)).toBe(false);
    expect(isPrefixOf(all.slice(1), all)).toBe(false);

    const templates = join(dir, 'edited');
    await writeEmbeddedTemplate(tarball, edited, templates);
    expect(await embeddedTemplateFor(join(dir, 'db-edited'), templates)).toBeUndefined();
  });

  it('has the same digests in the server’s bundle (esbuild) as in the TypeScript sources', async () => {
    // Bundled as build.ts bundles the server; written beside the package so that its npm imports resolve.
    const outfile = fileURLToPath(new URL(`../node_modules/.cache/gatehouse-test/digests-${process.pid}.mjs`, import.meta.url));
    await build({
      stdin: {
        contents: "export { migrationDigests } from '@gatehouse/api';",
        resolveDir: import.meta.dirname,
        loader: 'ts',
      },
      outfile,
      ...bundling,
      logLevel: 'warning',
    });
    try {
      const bundled = (await import(pathToFileURL(outfile).href)) as { migrationDigests: typeof migrationDigests };
      expect(bundled.migrationDigests()).toEqual(migrationDigests());
    } finally {
      await rm(outfile, { force: true });
    }
  });

  it('is ignored when missing or unreadable', async () => {
    expect(await embeddedTemplateFor(join(dir, 'db-none'), join(dir, 'nothing-here'))).toBeUndefined();
    const broken = join(dir, 'broken');
    await mkdir(broken, { recursive: true });
    await writeFile(join(broken, 'pglite-template.json'), '{"migrations": [null]}');
    expect(await embeddedTemplateFor(join(dir, 'db-broken'), broken)).toBeUndefined();
    await writeFile(join(broken, 'pglite-template.json'), 'not json');
    expect(await embeddedTemplateFor(join(dir, 'db-broken'), broken)).toBeUndefined();
  });
});
