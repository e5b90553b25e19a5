import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { ApplicationSettings } from './applications.schema.ts';

export const ApplicationEntity = defineEntity({
  name: 'Application',
  tableName: 'applications',
  properties: {
    id: p.uuid().primary(),
    name: p.string().length(200),
    environment: p.string().length(16),
    allowedOrigins: p.json<string[]>(),
    settings: p.json<ApplicationSettings>(),
    /** When the first user or session was created: `has_traffic` never goes back (users can be deleted). */
    firstTrafficAt: p.datetime().nullable(),
    /** A service's own application (`console`: the operators' console), created at start; it cannot be deleted. */
    reserved: p.string().length(32).nullable().unique(),
    createdAt: p.datetime().onCreate(() => new Date()),
    /** Set by the service that changes the row, so the answer and the event carry the stored value. */
    updatedAt: p.datetime().onCreate(() => new Date()),
  },
  indexes: [{ properties: ['createdAt', 'id'] }],
});
export type Application = InferEntity<typeof ApplicationEntity>;
