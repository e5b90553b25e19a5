import { z } from 'zod';
import { listQuerySchema, PageQuerySchema, pageOf } from '../../lib/pagination.ts';
import { text } from '../../lib/schemas.ts';

/** How many subject-set hops a check, expand or lookup follows before it answers 422 `depth_limit_exceeded`. */
export const MAX_DEPTH = 25;
/** Writes plus deletes of one `POST /v1/authz/tuples`. */
export const MAX_BATCH = 1000;

const NAME = '[a-z][a-z0-9_]{0,63}';
const ID = '[A-Za-z0-9_.|/=+-]{1,256}';
const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
/** `user:` names a Gatehouse user (a lower-case UUID), so that merge and deletion can find its tuples. */
const USER_OBJECT = new RegExp(`^user:(?!${UUID}(?:#|$))`);

export const NamespaceSchema = text().regex(new RegExp(`^${NAME}$`), 'a namespace: [a-z][a-z0-9_]{0,63}');
export const RelationSchema = text().regex(new RegExp(`^${NAME}$`), 'a relation: [a-z][a-z0-9_]{0,63}');

export const ObjectSchema = text()
  .regex(new RegExp(`^${NAME}:${ID}$`), {
    error: 'an object: namespace:id (id of [A-Za-z0-9_.|/=+-], up to 256)',
    abort: true,
  })
  .refine((s) => !USER_OBJECT.test(s), 'a user object is user:<user id>')
  .meta({ description: 'namespace:id', example: 'doc:readme' });

export const SubjectSchema = text()
  .regex(new RegExp(`^(?:user:${UUID}|${NAME}:${ID}#${NAME})$`), {
    error: 'a subject: user:<user id> or namespace:id#relation',
    abort: true,
  })
  .refine((s) => !USER_OBJECT.test(s), 'a user subject set is user:<user id>#relation')
  .meta({ description: 'user:<user id>, or a subject set namespace:id#relation', example: 'group:eng#member' });

/** A consistency token (the revision of a tuple batch, like a ZedToken): opaque digits. */
export const ConsistencyTokenSchema = text()
  .regex(/^[1-9][0-9]{0,18}$/, 'a consistency token')
  .meta({ example: '1042' });

export const ConsistencySchema = z
  .strictObject({
    mode: z.enum(['minimize_latency', 'at_least_as_fresh', 'fully_consistent']),
    token: ConsistencyTokenSchema.optional().meta({
      description: 'With at_least_as_fresh: a token a write answered',
      example: '1042',
    }),
  })
  .refine((c) => (c.mode === 'at_least_as_fresh') === (c.token !== undefined), {
    message: 'a token is required with at_least_as_fresh, and only with it',
    path: ['token'],
  })
  .meta({
    id: 'AuthzConsistency',
    description:
      'Every mode reads the primary database, so every answer already reflects every committed write: ' +
      'at_least_as_fresh only refuses a token that was never issued.',
  });

export const TupleInputSchema = z.strictObject({ object: ObjectSchema, relation: RelationSchema, subject: SubjectSchema });
export type TupleInput = z.infer<typeof TupleInputSchema>;

export const RelationshipTupleSchema = z
  .object({ object: text(), relation: text(), subject: text(), created_at: z.iso.datetime() })
  .meta({ id: 'RelationshipTuple' });
export type RelationshipTuple = z.infer<typeof RelationshipTupleSchema>;

export const WriteTuplesInputSchema = z
  .strictObject({
    writes: z.array(TupleInputSchema).max(MAX_BATCH).default([]),
    deletes: z.array(TupleInputSchema).max(MAX_BATCH).default([]),
  })
  .superRefine((batch, ctx) => {
    const size = batch.writes.length + batch.deletes.length;
    if (size === 0) ctx.addIssue({ code: 'custom', message: 'writes or deletes must name at least one tuple' });
    if (size > MAX_BATCH) ctx.addIssue({ code: 'custom', message: `at most ${MAX_BATCH} writes and deletes together` });
    const key = (t: TupleInput) => `${t.object}#${t.relation}@${t.subject}`;
    const written = new Set(batch.writes.map(key));
    batch.deletes.forEach((t, i) => {
      if (written.has(key(t))) ctx.addIssue({ code: 'custom', path: ['deletes', i], message: 'the same tuple is also written' });
    });
  });

export const WriteTuplesResultSchema = z
  .object({
    consistency_token: text().meta({ description: 'Pass to check as consistency.at_least_as_fresh' }),
    written: z.number().int().meta({ description: 'Tuples that did not exist before' }),
    deleted: z.number().int().meta({ description: 'Tuples that existed and were removed' }),
  })
  .meta({ id: 'AuthzWriteResult' });

export const ListTuplesInputSchema = listQuerySchema({
  object: ObjectSchema.optional(),
  namespace: NamespaceSchema.optional().meta({ description: 'Object namespace' }),
  relation: RelationSchema.optional(),
  subject: SubjectSchema.optional(),
});
export const TuplePageSchema = pageOf('tuples', RelationshipTupleSchema).meta({ id: 'RelationshipTuplePage' });

export const CheckInputSchema = z.strictObject({
  object: ObjectSchema,
  relation: RelationSchema,
  subject: SubjectSchema,
  consistency: ConsistencySchema.optional(),
});
export const CheckResultSchema = z.object({ allowed: z.boolean() }).meta({ id: 'AuthzCheckResult' });

export const ExpandInputSchema = z.strictObject({
  object: ObjectSchema,
  relation: RelationSchema,
  consistency: ConsistencySchema.optional(),
});
export const ExpandResultSchema = z
  .object({
    object: text(),
    relation: text(),
    usersets: z
      .array(
        z.object({
          userset: text().meta({ description: 'namespace:id#relation' }),
          depth: z.number().int().meta({ description: 'Subject-set hops from the expanded object#relation' }),
          subjects: z.array(text()).meta({
            description: 'Its direct subjects: users, and subject sets (each listed as a userset of its own)',
          }),
        }),
      )
      .meta({ description: 'Every userset reached, nearest first: the subject tree as an adjacency list' }),
  })
  .meta({ id: 'AuthzExpandResult' });

export const LookupInputSchema = PageQuerySchema.extend({
  subject: SubjectSchema,
  relation: RelationSchema,
  namespace: NamespaceSchema,
  consistency: ConsistencySchema.optional(),
}).strict();
export const LookupPageSchema = pageOf('objects', text().meta({ description: 'namespace:id' })).meta({
  id: 'AuthzLookupPage',
});

/** S11. */
export const ListRelationsInputSchema = listQuerySchema({
  namespace: NamespaceSchema.optional().meta({ description: 'Restricts to one object namespace' }),
});
export const RelationPageSchema = pageOf('relations', RelationshipTupleSchema).meta({ id: 'RelationshipTupleListPage' });
