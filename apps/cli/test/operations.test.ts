import { loadOpenApiDocument } from '@gatehouse/api';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { OPERATION_COMMANDS } from '../src/operations.ts';
import { createProgram } from '../src/program.ts';

/** Finds `apps create` in the program's command tree. */
const find = (program: Command, path: string): Command | undefined =>
  path.split(' ').reduce<Command | undefined>((command, name) => command?.commands.find((c) => c.name() === name), program);

describe('CLI coverage of the management API', () => {
  it('has a command for every operator and secret-key operation of the OpenAPI document, and only real ones', async () => {
    const doc = (await loadOpenApiDocument('http://localhost:4000')) as { paths: Record<string, Record<string, any>> };
    const management = Object.values(doc.paths)
      .flatMap((item) => Object.values(item))
      .filter((op) => (op.security as Array<Record<string, unknown>>).some((s) => 'secretKey' in s || 'operatorToken' in s))
      .map((op) => op.operationId as string);
    expect(management.length).toBeGreaterThan(30);
    const missing = management.filter((id) => !(id in OPERATION_COMMANDS));
    expect(missing, 'operations without a CLI command (add one and map it in src/operations.ts)').toEqual([]);
    expect(
      Object.keys(OPERATION_COMMANDS).filter((id) => !management.includes(id)),
      'stale entries',
    ).toEqual([]);
    const program = createProgram();
    const absent = Object.values(OPERATION_COMMANDS).filter((path) => !find(program, path));
    expect(absent, 'mapped commands the CLI does not have').toEqual([]);
  });
});
