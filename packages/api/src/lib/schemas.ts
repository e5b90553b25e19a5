import { z } from 'zod';

/** What every DELETE answers: the id of the path's last segment. */
export const DeletedSchema = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: 'Deleted' });

export const IdParamSchema = z.strictObject({ id: z.uuid() });
