/**
 * A fresh embedded database is created from a migrated template rather than by an initdb and the migrations replayed
 * one by one (seconds of CPU and a gigabyte of memory on the first start). The template is a cache, never a source:
 * it is built from the migrations (`npm run embedded-template`, run by `npm ci` / `npm install`), records which
 * migrations it holds with a digest of the SQL each one runs, and is used only while those are the first migrations of
 * the current list, unchanged. Whatever it lacks is applied by the migrator as usual; a template that does not match
 * (a migration edited, removed or reordered) is ignored and the database is created the slow way.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { migrationsList } from './migrations/index.ts';

/** A migration of the list: its name and a digest of its code (the class's source text). */
export interface MigrationDigest {
  name: string;
  digest: string;
}

/** Where `npm ci` leaves the template: the package's own cache directory (never committed). */
export const DEFAULT_TEMPLATE_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../node_modules/.cache/gatehouse');
const TARBALL = 'pglite-template.tar.gz';
const MANIFEST = 'pglite-template.json';

/**
 * Every committed migration, in order, with the digest of the SQL its `up` runs. The SQL, not the code's text: the
 * same migration read from its TypeScript source or from the server's bundle (which reformats it) has one digest.
 */
export function migrationDigests(): MigrationDigest[] {
  return migrationsList.map((m) => ({
    name: m.name,
    digest: createHash('sha256')
      .update(JSON.stringify(sqlOf(m.class)))
      .digest('base64url'),
  }));
}

/** The SQL of a migration's `up`, listed without a database: every migration only adds SQL (`addSql`) there. */
function sqlOf(migration: (typeof migrationsList)[number]['class']): string[] {
  // Listing the SQL never reaches the driver or the configuration: up() only calls addSql.
  const instance = new migration(undefined as never, undefined as never);
  if (instance.up() instanceof Promise) throw new Error(`${instance.name}: up() may only add SQL`);
  return instance.getQueries().map(String);
}

/** Whether `held` (a template's migrations) are the first migrations of `current`, each unchanged. */
export function isPrefixOf(held: MigrationDigest[], current: MigrationDigest[]): boolean {
  return held.length <= current.length && held.every((m, i) => m.name === current[i]?.name && m.digest === current[i]?.digest);
}

/** Writes the template (the tarball of a migrated database) and its manifest, each by rename: never half written. */
export async function writeEmbeddedTemplate(tarball: Blob, migrations: MigrationDigest[], dir = DEFAULT_TEMPLATE_DIR) {
  await mkdir(dir, { recursive: true });
  const suffix = `.${process.pid}.tmp`;
  await writeFile(join(dir, TARBALL + suffix), Buffer.from(await tarball.arrayBuffer()));
  await writeFile(join(dir, MANIFEST + suffix), JSON.stringify({ migrations }, null, 2));
  // The manifest goes last: a reader that sees it sees the tarball it describes.
  await rename(join(dir, TARBALL + suffix), join(dir, TARBALL));
  await rename(join(dir, MANIFEST + suffix), join(dir, MANIFEST));
}

/**
 * The template to create `dataDir` from, with the migrations it holds: undefined when the directory already holds a database, when there is no
 * template, or when the template's migrations are not the first migrations of the current list, unchanged.
 */
export async function embeddedTemplateFor(
  dataDir: string,
  dir = DEFAULT_TEMPLATE_DIR,
): Promise<{ data: Blob; migrations: string[] } | undefined> {
  if (existsSync(join(dataDir, 'PG_VERSION'))) return undefined;
  try {
    const manifest: unknown = JSON.parse(await readFile(join(dir, MANIFEST), 'utf8'));
    // a JSON document is an object or a value; its `migrations` is read as unknown and checked below.
    const held = (manifest as { migrations?: unknown }).migrations;
    if (!Array.isArray(held)) return undefined;
    // The shape is checked field by field in isPrefixOf (a missing field never equals a digest string).
    const digests = held as MigrationDigest[];
    if (!isPrefixOf(digests, migrationDigests())) return undefined;
    return {
      data: new Blob([await readFile(join(dir, TARBALL))], { type: 'application/gzip' }),
      migrations: digests.map((m) => m.name),
    };
  } catch {
    return undefined;
  }
}
