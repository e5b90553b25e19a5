import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const operatorTokenPath = (dataDir: string): string => join(dataDir, 'operator-token');
export const masterKeyPath = (dataDir: string): string => join(dataDir, 'master.key');

/** Reads a generated secret from the data directory, creating it (mode 0600) on first use. */
async function fileSecret(path: string, generate: () => string): Promise<{ value: string; created: boolean }> {
  try {
    return { value: (await readFile(path, 'utf8')).trim(), created: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const value = generate();
  // `wx` fails if another process created it first; then read theirs.
  try {
    await writeFile(path, `${value}\n`, { mode: 0o600, flag: 'wx' });
    await chmod(path, 0o600);
    return { value, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return { value: (await readFile(path, 'utf8')).trim(), created: false };
  }
}

export interface Secrets {
  operatorToken: string;
  /** Where the operator token lives, when it came from the data directory. */
  operatorTokenFile: string | null;
  masterKey: Buffer;
}

export async function loadSecrets(
  dataDir: string,
  env: { GATEHOUSE_OPERATOR_TOKEN?: string; GATEHOUSE_MASTER_KEY?: string },
): Promise<Secrets> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const operator = env.GATEHOUSE_OPERATOR_TOKEN
    ? { value: env.GATEHOUSE_OPERATOR_TOKEN, file: null }
    : {
        value: (await fileSecret(operatorTokenPath(dataDir), () => `op_${randomBytes(32).toString('base64url')}`)).value,
        file: operatorTokenPath(dataDir),
      };
  const masterKey = env.GATEHOUSE_MASTER_KEY
    ? env.GATEHOUSE_MASTER_KEY
    : (await fileSecret(masterKeyPath(dataDir), () => randomBytes(32).toString('base64'))).value;
  return { operatorToken: operator.value, operatorTokenFile: operator.file, masterKey: Buffer.from(masterKey, 'base64') };
}
