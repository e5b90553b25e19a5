import { z } from 'zod';

/** limit/offset of every paginated list: out-of-range values are 422, never clamped (CONTRACT §1). */
export const PageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25).meta({ description: 'Page size, 1–100' }),
  offset: z.coerce.number().int().min(0).default(0).meta({ description: 'Rows to skip' }),
});
export type PageQuery = z.infer<typeof PageQuerySchema>;

/** The input of a paginated list with extra filters; it may be omitted entirely (`sdk.users.list()`). */
export const listQuerySchema = <S extends z.ZodRawShape>(filters: S) =>
  PageQuerySchema.extend(filters)
    .strict()
    // zod types prefault's value as the parsed output; `{}` is a valid input that parses to the defaults.
    .prefault({} as never);

/** The paginated collection shape: `{<items>, total, limit, offset}`. */
export const pageOf = <K extends string, T extends z.ZodType>(key: K, item: T) =>
  // a computed key widens to `string`: the shape has exactly the key `K`.
  z.object({ [key]: z.array(item), total: z.number().int(), limit: z.number().int(), offset: z.number().int() } as {
    [P in K]: z.ZodArray<T>;
  } & { total: z.ZodNumber; limit: z.ZodNumber; offset: z.ZodNumber });

/** Escapes LIKE metacharacters so a search matches literally (`%` and `_` are not wildcards). */
export const escapeLike = (value: string): string => value.replace(/[\\%_]/g, (c) => `\\${c}`);
