import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { stripVTControlCharacters } from 'node:util';
import { GatehouseError } from '@gatehouse/sdk';
import { renderToString } from 'ink';
import { describe, expect, it } from 'vitest';
import { configPath, readConfig, writeConfig } from '../src/config.ts';
import { resolveCredentials } from '../src/context.ts';
import { reportError, UsageError } from '../src/errors.ts';
import { detectMode } from '../src/output.ts';
import { formatValue } from '../src/ui/format.ts';
import { fitWidths, Table } from '../src/ui/table.tsx';
import { recordView, renderPlain, tableView } from '../src/ui/view.ts';
import { ViewOutput } from '../src/ui/view-output.tsx';

const columns = [
  { key: 'id', header: 'ID', value: (r: { id: string; tags: string[]; note: string | null }) => r.id },
  { key: 'tags', header: 'TAGS', value: (r: { id: string; tags: string[]; note: string | null }) => r.tags },
  { key: 'note', header: 'NOTE', value: (r: { id: string; tags: string[]; note: string | null }) => r.note },
];
const rows = [
  { id: 'a1', tags: ['x', 'y'], note: null },
  { id: 'b2', tags: [], note: 'tab\there' },
];

describe('output mode', () => {
  it('is rich only on an interactive terminal', () => {
    expect(detectMode(false, { isTTY: true }, { TERM: 'xterm-256color' })).toBe('rich');
    expect(detectMode(false, { isTTY: false }, {})).toBe('plain');
    expect(detectMode(false, { isTTY: true }, { TERM: 'dumb' })).toBe('plain');
    expect(detectMode(false, { isTTY: true }, { CI: 'true' })).toBe('plain');
    expect(detectMode(false, { isTTY: true }, { CI: '1' })).toBe('plain');
    expect(detectMode(false, { isTTY: true }, { CI: 'false' })).toBe('rich');
    expect(detectMode(true, { isTTY: true }, {})).toBe('json');
    expect(detectMode(true, { isTTY: false }, { CI: '1' })).toBe('json');
  });
});

describe('plain text', () => {
  it('prints a table as a header of field names and tab-separated rows, escaping tabs', () => {
    const text = renderPlain(tableView(columns, rows, 'Nothing.'));
    expect(text.stdout).toBe('id\ttags\tnote\na1\tx,y\t\nb2\t\ttab\\there\n');
    expect(text.stderr).toBe('');
  });

  it('prints a record as field<TAB>value lines and its note on stderr', () => {
    const text = renderPlain(recordView({ id: 'u1', profile: { a: 1 }, merged_into: null, ok: true }, 'Shown once.'));
    expect(text.stdout).toBe('id\tu1\nprofile\t{"a":1}\nmerged_into\t\nok\ttrue\n');
    expect(text.stderr).toBe('Shown once.\n');
  });

  it('formats values', () => {
    expect(formatValue(null, 'plain')).toBe('');
    expect(formatValue(null, 'rich')).toBe('—');
    expect(formatValue('2026-11-22T05:23:14.026Z', 'rich', true)).toBe('2026-11-22 05:23');
    expect(formatValue('2026-11-22T05:23:14.026Z', 'plain', true)).toBe('2026-11-22T05:23:14.026Z');
    expect(formatValue(['a', 'b'], 'plain')).toBe('a,b');
    expect(formatValue('line\nbreak', 'plain')).toBe('line\\nbreak');
  });
});

describe('ink components', () => {
  it('Table aligns columns under bold headers', () => {
    const out = renderToString(
      <Table
        headers={['ID', 'EMAIL']}
        rows={[
          ['1', 'a@example.com'],
          ['22', '—'],
        ]}
      />,
      { columns: 80 },
    );
    const lines = out.split('\n').map((line) => stripVTControlCharacters(line).trimEnd());
    expect(lines).toEqual(['ID  EMAIL', '1   a@example.com', '22  —']);
  });

  it('Table truncates its widest columns to fit the terminal, never the first', () => {
    expect(fitWidths([38, 15, 10], 80)).toEqual([38, 15, 10]);
    expect(fitWidths([38, 30, 8, 40], 80)).toEqual([38, 17, 8, 17]);
    expect(fitWidths([38, 30, 30], 40)).toEqual([38, 7, 7]);
    const id = '01a201b5-65c4-7261-89c1-246cba78b806';
    const out = renderToString(
      <Table headers={['ID', 'NAME', 'NOTE']} rows={[[id, 'n'.repeat(40), 'x'.repeat(40)]]} maxWidth={70} />,
      { columns: 70 },
    );
    const row = stripVTControlCharacters(out.split('\n')[1]!).trimEnd();
    expect(row.startsWith(`${id}  nnnnnn`)).toBe(true);
    expect(row).toMatch(/… {2}x+…$/);
    expect(row.length).toBeLessThanOrEqual(70);
  });

  it('ViewOutput renders tables, records, messages and empty lists', () => {
    const strip = stripVTControlCharacters;
    const table = strip(renderToString(<ViewOutput view={tableView(columns, rows, 'Nothing.', '1–2 of 2')} />));
    expect(table).toMatch(/^ID\s+TAGS\s+NOTE/);
    expect(table).toContain('1–2 of 2');
    expect(strip(renderToString(<ViewOutput view={tableView(columns, [], 'No users.', '0 of 0')} />))).toBe('No users. (0 of 0)');
    const record = strip(renderToString(<ViewOutput view={recordView({ id: 'u1', merged_into: null }, 'Keep it.')} />));
    expect(record.split('\n').map((l) => l.trimEnd())).toEqual(['id           u1', 'merged_into  —', 'Keep it.']);
    expect(strip(renderToString(<ViewOutput view={{ kind: 'message', text: 'Done' }} />))).toBe('✔ Done');
  });
});

describe('config file', () => {
  it('lives at GATEHOUSE_CONFIG, else under an absolute XDG_CONFIG_HOME, else ~/.config', () => {
    expect(configPath({ GATEHOUSE_CONFIG: '/etc/gh.json', XDG_CONFIG_HOME: '/x' })).toBe('/etc/gh.json');
    expect(configPath({ XDG_CONFIG_HOME: '/x' })).toBe('/x/gatehouse/config.json');
    expect(configPath({ XDG_CONFIG_HOME: 'relative' })).toBe(join(homedir(), '.config/gatehouse/config.json'));
    expect(configPath({})).toBe(join(homedir(), '.config/gatehouse/config.json'));
  });

  it('is replaced by a 0600 file even when the old one was world-readable', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-config-'));
    try {
      const path = join(dir, 'config.json');
      await writeFile(path, '{}', { mode: 0o644 });
      await writeConfig({ base_url: 'http://x', application_id: 'a', secret_key: 's' }, path);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect(await readConfig(path)).toEqual({ base_url: 'http://x', application_id: 'a', secret_key: 's' });
      await writeFile(path, '{not json');
      await expect(readConfig(path)).rejects.toBeInstanceOf(UsageError);
      expect(await readConfig(join(dir, 'absent.json'))).toEqual({});
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('credentials come from flags or env first, then the file, then the default URL', () => {
    const file = { base_url: 'http://file:1', application_id: 'file-app', secret_key: 'file-key' };
    expect(resolveCredentials({ secretKey: 'flag-key', baseUrl: '' }, file)).toEqual({
      baseUrl: 'http://file:1',
      applicationId: 'file-app',
      secretKey: 'flag-key',
    });
    expect(resolveCredentials({}, {})).toEqual({
      baseUrl: 'http://localhost:4000',
      applicationId: undefined,
      secretKey: undefined,
    });
    expect(resolveCredentials({ baseUrl: 'https://id.example.com///' }, {}).baseUrl).toBe('https://id.example.com');
  });
});

describe('error reporting', () => {
  const capture = () => {
    let text = '';
    const stream = new Writable({
      write(chunk, _encoding, done) {
        text += String(chunk);
        done();
      },
    });
    return { stream, text: () => text };
  };

  it('prints API errors as one line with their code and details, exit 1', () => {
    const out = capture();
    const error = new GatehouseError('validation_failed', 422, 'The request does not match the schema', [
      { path: 'limit', message: 'Too big' },
      { path: 'offset', message: 'Too\nsmall' },
    ]);
    expect(reportError(error, out.stream)).toBe(1);
    expect(out.text()).toBe(
      'error: validation_failed: The request does not match the schema (limit: Too big; offset: Too small)\n',
    );
  });

  it('does not repeat a detail that says what the message says, but still names its field', () => {
    const out = capture();
    const message = 'Shared development credentials are for development applications only.';
    const error = new GatehouseError('validation_failed', 422, message, [{ path: 'use_shared_dev_credentials', message }]);
    expect(reportError(error, out.stream)).toBe(1);
    expect(out.text()).toBe(`error: validation_failed: ${message} (use_shared_dev_credentials)\n`);
  });

  it('prints the reason a refusal gives in its details', () => {
    const out = capture();
    const error = new GatehouseError('invalid_url', 422, 'The URL is not allowed', [
      { path: 'metadata_url', message: 'must be https' },
    ]);
    expect(reportError(error, out.stream)).toBe(1);
    expect(out.text()).toBe('error: invalid_url: The URL is not allowed (metadata_url: must be https)\n');
  });

  it('prints usage errors without a code, exit 2', () => {
    const out = capture();
    expect(reportError(new UsageError('not logged in'), out.stream)).toBe(2);
    expect(out.text()).toBe('error: not logged in\n');
  });
});
