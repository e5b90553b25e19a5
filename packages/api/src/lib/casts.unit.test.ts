import { readdirSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Issue 21: a type assertion in packages/api/src must say why the compiler cannot know what it asserts.
// Node's own type stripper (the TypeScript parser it ships) tells a cast from `as` in an import, a string or a
// comment: it blanks out a cast's `as T` but keeps the expression before it.
function uncommentedCasts(source: string): number[] {
  const stripped = stripTypeScriptTypes(source, { mode: 'strip' });
  if (stripped.length !== source.length) throw new Error('type stripping moved the text; the scan cannot map it back');
  const lines = source.split('\n');
  const found: number[] = [];
  for (const match of source.matchAll(/\bas\b(?!\s+const\b)/g)) {
    const at = match.index;
    if (stripped.slice(at, at + 2) !== '  ') continue; // kept: an import or export rename, a string, a comment
    let before = at - 1;
    while (before >= 0 && /\s/.test(source.charAt(before))) before--;
    // erased together with what precedes it: part of a type (`as unknown as T`, a mapped type, an `import type`)
    if (before < 0 || stripped.charAt(before) !== source.charAt(before)) continue;
    const line = source.slice(0, at).split('\n').length;
    // a `//` comment on the line or the one above, or a doc comment (`*/`) ending just above
    const commented = (text = '') => /(?:^|[\s;,(){}[\]])\/\//.test(text);
    const above = lines[line - 2] ?? '';
    if (!commented(lines[line - 1]) && !commented(above) && !above.trimEnd().endsWith('*/')) found.push(line);
  }
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('type assertions', () => {
  it('finds a cast without a comment and nothing else', () => {
    const source = [
      "import { a as b } from 'x';",
      "import type { C as D } from 'y';",
      'export { b as e };',
      'type M<T> = { [K in keyof T as Uppercase<K>]: T[K] };',
      "const s = 'read as text'; // cast as nothing",
      'const k = [1] as const;',
      'const u = f() as unknown as Row;',
      '// the driver types rows as unknown',
      'const r = g() as Row;',
      'const t = h() as Row; // why',
      '',
      'const w = (v as { x: number }).x;',
      '/** A doc comment says why. */',
      'const d = j() as Row;',
    ].join('\n');
    expect(uncommentedCasts(source)).toEqual([7, 12]);
  });

  it('leaves none uncommented in packages/api/src', () => {
    const root = fileURLToPath(new URL('..', import.meta.url));
    const uncommented = sourceFiles(root).flatMap((file) =>
      uncommentedCasts(readFileSync(file, 'utf8')).map((line) => `${relative(root, file)}:${line}`),
    );
    expect(uncommented).toEqual([]);
  });
});
