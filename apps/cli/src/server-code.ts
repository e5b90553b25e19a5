import { UsageError } from './errors.ts';

/**
 * Loads a module of the server (`@gatehouse/server/config`, `@gatehouse/api`) on demand. The published CLI does not
 * carry the server's code, so there the import fails: the usage error says what to do instead (`instead`) rather than
 * Node's module-not-found.
 */
export async function loadServerCode<T>(load: () => Promise<T>, instead: string): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === 'ERR_MODULE_NOT_FOUND' && /@gatehouse\/(server|api)\b/.test(message)) {
      throw new UsageError(`this gatehouse CLI was installed without the Gatehouse server's code: ${instead}`);
    }
    throw error;
  }
}
