import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { UsageError } from './errors.ts';

/** What `gatehouse login` stores. */
export interface StoredConfig {
  base_url?: string;
  application_id?: string;
  secret_key?: string;
}

/** `$GATEHOUSE_CONFIG`, else `$XDG_CONFIG_HOME/gatehouse/config.json`, else `~/.config/gatehouse/config.json`. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.GATEHOUSE_CONFIG) return resolve(env.GATEHOUSE_CONFIG);
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const base = env.XDG_CONFIG_HOME && isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(base, 'gatehouse', 'config.json');
}

export async function readConfig(path: string = configPath()): Promise<StoredConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`the config file ${path} is not valid JSON: fix it, delete it or run \`gatehouse login\` again`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`the config file ${path} must hold a JSON object`);
  }
  const record = parsed as Record<string, unknown>;
  const field = (key: keyof StoredConfig) => (typeof record[key] === 'string' && record[key] !== '' ? record[key] : undefined);
  return { base_url: field('base_url'), application_id: field('application_id'), secret_key: field('secret_key') };
}

/**
 * Writes the config holding a secret key. It is written to a new file created 0600 and renamed into place, so it is
 * never readable by other local users, not even for a moment, and a crash never leaves a half-written file.
 */
export async function writeConfig(config: StoredConfig, path: string = configPath()): Promise<string> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await chmod(temporary, 0o600);
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  return path;
}
