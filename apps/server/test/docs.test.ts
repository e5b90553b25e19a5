import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataDirOf, operatorTokenPath, readEnv } from '../src/config.ts';
import { UUID } from './helpers/server.ts';
import { serverSuite } from './helpers/suite.ts';

/**
 * The README's quick start and the first-application guide, run as a newcomer runs them: their shell blocks marked
 * ```` ```sh test=<name> ```` go to one bash session, in order, against a fresh server, so the commands cannot drift
 * from what the service does. Also: every link of the docs resolves, and the docs speak no internal language.
 */
const root = fileURLToPath(new URL('../../../', import.meta.url));
const TESTED = ['README.md', 'docs/first-application.md'];
/** What a newcomer reads: these speak no internal language. */
const DOCS = [
  'README.md',
  ...readdirSync(join(root, 'docs')).map((f) => `docs/${f}`),
  ...readmesOf('apps'),
  ...readmesOf('packages'),
];
/** Every link of these must resolve. */
const LINKED = [...DOCS, 'ARCHITECTURE.md', 'CODE_STYLE.md'];

function readmesOf(folder: string): string[] {
  return readdirSync(join(root, folder))
    .map((name) => `${folder}/${name}/README.md`)
    .filter((path) => existsSync(join(root, path)));
}

interface Block {
  file: string;
  line: number;
  info: string;
  code: string;
}

/** The fenced code blocks of a Markdown file (indented ones in list items too), with their info strings. */
function blocksOf(file: string): Block[] {
  const lines = readFileSync(join(root, file), 'utf8').split('\n');
  const blocks: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const start = i;
    const body: string[] = [];
    while (++i < lines.length && lines[i]!.trim() !== '```') body.push(lines[i]!.slice(indent));
    blocks.push({ file, line: start + 1, info: open[2]!.trim(), code: body.join('\n') });
  }
  return blocks;
}

const tested = (file: string) =>
  blocksOf(file).flatMap((block) => {
    const name = /^sh test=([\w-]+)$/.exec(block.info)?.[1];
    return name ? [{ ...block, name }] : [];
  });

/** Every JSON value printed one after another (curl prints bodies without a newline; `jq` pretty-prints). */
function jsonValues(text: string): any[] {
  const values: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if ((c === '}' || c === ']') && depth > 0 && --depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
  }
  return values;
}

const succeeded = (value: any) => {
  expect(value, JSON.stringify(value)).toMatchObject({ success: true, error: null });
  return value.data;
};

/**
 * What each tested block must print, in the order the docs run them: what the text beside the block says it answers.
 * A block added to or removed from the docs without its entry here fails the test.
 */
const EXPECTED: Record<string, (output: { json: any[]; text: string }) => void> = {
  'create-application': ({ json }) => {
    expect(json).toHaveLength(1);
    const data = succeeded(json[0]);
    expect(data.application).toMatchObject({ id: expect.stringMatching(UUID), name: 'My app', environment: 'development' });
    expect(data.secret_key).toMatchObject({ scopes: ['*'], secret: expect.stringMatching(/^sk_test_/) });
  },
  rest: ({ json }) => {
    expect(json).toHaveLength(1);
    expect(succeeded(json[0])).toMatchObject({ primary_email: 'ada@example.com', email_verified: false });
  },
  cli: ({ text }) => {
    expect(text).toMatch(/sk_test_\w+/);
    expect(text).toContain('grace@example.com');
    expect(text).toContain('ada@example.com');
  },
  'user-and-organization': ({ json }) => {
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ name: 'Acme Inc.', slug: 'acme-inc' });
  },
  member: ({ json }) => {
    expect(json).toHaveLength(2);
    expect(succeeded(json[0])).toMatchObject({ role: 'admin' });
    expect(succeeded(json[1])).toMatchObject({ total: 1, members: [{ role: 'admin' }] });
  },
  search: ({ json }) => {
    expect(json).toHaveLength(2);
    expect(succeeded(json[0])).toMatchObject({ total: 1, organizations: [{ slug: 'acme-inc' }] });
    expect(succeeded(json[1])).toMatchObject({ total: 1, users: [{ primary_email: 'ada.lovelace@example.com' }] });
  },
  'api-key': ({ json }) => {
    expect(json).toHaveLength(1);
    expect(succeeded(json[0])).toMatchObject({
      name: 'read-only',
      scopes: ['users:read'],
      secret: expect.stringMatching(/^sk_test_/),
    });
  },
  'insufficient-scope': ({ json }) => {
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ success: false, data: null, error: { code: 'insufficient_scope' } });
  },
};

/** Runs a bash script; answers its exit code and everything it printed. */
function bash(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-c', script], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the quick start and the first-application guide, run against a fresh server', () => {
  const suite = serverSuite({ smtp: false });
  let home: string;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), 'gatehouse-docs-'));
  });
  afterAll(() => rm(home, { recursive: true, force: true }));

  it('the variables the reader sets are the ones given to the blocks: the default address and token file', () => {
    const [environment, ...others] = tested('README.md').filter((b) => b.name === 'environment');
    expect(environment, 'README.md has a "sh test=environment" block').toBeDefined();
    expect(others).toEqual([]);
    const assigned = Object.fromEntries(
      environment!.code.split('\n').map((line) => line.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );
    const env = readEnv({});
    expect(assigned).toEqual({
      GATEHOUSE: `http://localhost:${env.PORT}`,
      OP: `$(cat ${relative(root, operatorTokenPath(dataDirOf({ ...env, INIT_CWD: root })))})`,
    });
  });

  it('every block succeeds and prints what the docs say', { timeout: 180_000 }, async () => {
    const blocks = TESTED.flatMap(tested).filter((b) => b.name !== 'environment');
    expect(blocks.map((b) => b.name)).toEqual(Object.keys(EXPECTED));
    const marker = (name: string) => `\n::docs-test ${name}::\n`;
    const script = ['set -euo pipefail', ...blocks.flatMap((b) => [`printf '${marker(b.name)}'`, b.code])].join('\n');
    const env: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: home,
      GATEHOUSE: suite.server.url,
      OP: suite.server.operatorToken,
      // The CLI's `login` writes here, not into the config of whoever runs the tests.
      GATEHOUSE_CONFIG: join(home, 'gatehouse.json'),
      NO_COLOR: '1',
    };
    const run = await bash(script, env);
    const outputs = run.stdout.split(/\n::docs-test ([\w-]+)::\n/);
    const printed = new Map<string, string>();
    for (let i = 1; i < outputs.length; i += 2) printed.set(outputs[i]!, outputs[i + 1]!);
    const failed = blocks[printed.size - 1];
    expect(run.code, `${failed?.file}:${failed?.line} (${failed?.name}) failed:\n${run.stderr}\n${run.stdout}`).toBe(0);
    for (const block of blocks) {
      const text = printed.get(block.name)!;
      try {
        EXPECTED[block.name]!({ json: jsonValues(text), text });
      } catch (error) {
        throw new Error(`${block.file}:${block.line} (${block.name}) printed:\n${text}\n${(error as Error).message}`);
      }
    }
  });
});

/**
 * docs/add-sign-in.md shows each relying party's code whole, in a block marked ```` ```ts recipe=<name> ````: it is
 * `apps/server/test/recipes/<name>.ts`, the file add-sign-in.test.ts runs, character for character.
 */
describe('the sign-in recipes of docs/add-sign-in.md', () => {
  it('are the files the recipe tests run, each shown once', () => {
    const recipes = join(root, 'apps/server/test/recipes');
    const shown = blocksOf('docs/add-sign-in.md').flatMap((block) => {
      const name = /^ts recipe=([\w-]+)$/.exec(block.info)?.[1];
      return name ? [{ ...block, name }] : [];
    });
    const files = readdirSync(recipes)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3));
    expect(shown.map((b) => b.name).sort()).toEqual(files.sort());
    for (const block of shown) {
      const file = readFileSync(join(recipes, `${block.name}.ts`), 'utf8');
      expect(`${block.code}\n`, `docs/add-sign-in.md:${block.line} differs from recipes/${block.name}.ts`).toBe(file);
    }
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

function anchorsOf(file: string): Set<string> {
  const text = readFileSync(file, 'utf8').replace(/^\s*```[\s\S]*?^\s*```/gm, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1]!.trim())));
}

describe('the docs', () => {
  it('link only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of LINKED) {
      const text = readFileSync(join(root, file), 'utf8').replace(/^\s*```[\s\S]*?^\s*```/gm, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue;
        const [path, anchor] = target!.split('#');
        const resolved = path ? resolve(dirname(join(root, file)), path) : join(root, file);
        if (!existsSync(resolved)) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor))
          broken.push(`${file}: ${target} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('speak no internal language (seed route numbers, the contract or the security rules by section)', () => {
    const internal = /\bS[0-9]{1,2}\b|the seed|CONTRACT §|SECURITY(\.md)? rule/;
    const found = DOCS.flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => (internal.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(found).toEqual([]);
  });
});

/** Every TypeScript source file under `dir` (tests excluded). */
function sourcesOf(dir: string): string[] {
  return readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts') && !path.endsWith('.test.ts'))
    .map((path) => `${dir}/${path}`);
}

describe('what ARCHITECTURE.md says of the code', () => {
  it('the server reads the process environment in env.ts only: everything else is handed its configuration', () => {
    const readers = [...sourcesOf('apps/server/src'), ...sourcesOf('packages/api/src')].filter(
      (file) => !file.endsWith('/env.ts') && /\bprocess\.env\b/.test(readFileSync(join(root, file), 'utf8')),
    );
    expect(readers).toEqual([]);
  });
});
