import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { EditableTenantRowEntity } from './tenant-row.entity.ts';

/**
 * The logo an application uploaded (`PUT /v1/applications/{id}/branding/logo`), served by us at `/a/{id}/logo`: at
 * most one per application (the unique index), at most 256 KiB, a PNG, JPEG, WebP or GIF whose bytes were checked.
 */
export const ApplicationLogoEntity = defineEntity({
  name: 'ApplicationLogo',
  tableName: 'application_logos',
  extends: EditableTenantRowEntity,
  properties: {
    /** `image/png`, `image/jpeg`, `image/webp` or `image/gif`: what the bytes are, as sniffed at upload. */
    contentType: p.string().length(32),
    data: p.blob(),
    /** The bytes' SHA-256, hex: the strong ETag, and its first 12 characters the `v` of the served URL. */
    sha256: p.string().length(64),
  },
  uniques: [{ name: 'application_logos_application_unique', properties: ['application'] }],
});
export type ApplicationLogo = InferEntity<typeof ApplicationLogoEntity>;
