import { AppError, notFound } from '../../errors.ts';
import type { DirectoryRecord } from '../directories/directories.schema.ts';
import {
  CreateDirectoryInputSchema,
  DIRECTORY_PROVIDERS,
  UpdateDirectoryInputSchema,
} from '../directories/directories.schema.ts';
import { createDirectory, listDirectories, rotateDirectoryToken, updateDirectory } from '../directories/directories.service.ts';
import { requirePortalIntent } from './portal.domains.ts';
import type { PortalContext } from './portal.sso.ts';

/**
 * The `directory` intent's operations, for a portal session: the directories module's own service functions with the
 * session's organization, and the API's own input schemas (a refused input is 422 `validation_failed`). A directory of
 * another organization or application is 404: the service finds a directory by its id and organization together.
 */
export const PORTAL_DIRECTORY_PROVIDERS = DIRECTORY_PROVIDERS;
export type PortalDirectoryProvider = (typeof DIRECTORY_PROVIDERS)[number];

const parsed = <T>(
  result: { success: true; data: T } | { success: false; error: { issues: Array<{ path: PropertyKey[]; message: string }> } },
): T => {
  if (result.success) return result.data;
  throw new AppError(
    'validation_failed',
    'The form cannot be used',
    result.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message })),
  );
};

export async function portalDirectories(ctx: PortalContext): Promise<DirectoryRecord[]> {
  requirePortalIntent(ctx, 'directory');
  return listDirectories(ctx, ctx.portal.organizationId);
}

export async function portalDirectory(ctx: PortalContext, directoryId: string): Promise<DirectoryRecord> {
  const directory = (await portalDirectories(ctx)).find((d) => d.id === directoryId);
  if (!directory) throw notFound('Directory');
  return directory;
}

/** A new directory of the organization, with its token (answered now only). */
export async function portalCreateDirectory(ctx: PortalContext, input: { name: unknown; provider: unknown }) {
  requirePortalIntent(ctx, 'directory');
  const data = parsed(
    CreateDirectoryInputSchema.safeParse({ id: ctx.portal.organizationId, name: input.name, provider: input.provider }),
  );
  return createDirectory(ctx, data);
}

export async function portalRotateDirectoryToken(ctx: PortalContext, directoryId: string) {
  const directory = await portalDirectory(ctx, directoryId);
  return rotateDirectoryToken(ctx, { id: ctx.portal.organizationId, directory_id: directory.id });
}

/** The directory's status or its group → role mappings (in priority order). */
export async function portalUpdateDirectory(
  ctx: PortalContext,
  directoryId: string,
  input: { status?: unknown; group_role_mappings?: unknown },
) {
  const directory = await portalDirectory(ctx, directoryId);
  const data = parsed(
    UpdateDirectoryInputSchema.safeParse({ id: ctx.portal.organizationId, directory_id: directory.id, ...input }),
  );
  return updateDirectory(ctx, data);
}
