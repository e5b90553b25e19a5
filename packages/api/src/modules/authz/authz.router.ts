import { router } from '../../trpc.ts';
import { secretKeyInStatementProcedure, secretKeyProcedure } from '../api-keys/api-keys.service.ts';
import { signedInProcedure } from '../sessions/signed-in.ts';
import {
  CheckInputSchema,
  CheckResultSchema,
  ExpandInputSchema,
  ExpandResultSchema,
  ListRelationsInputSchema,
  ListTuplesInputSchema,
  LookupInputSchema,
  LookupPageSchema,
  RelationPageSchema,
  TuplePageSchema,
  WriteTuplesInputSchema,
  WriteTuplesResultSchema,
} from './authz.schema.ts';
import { check, expand, listRelations, listTuples, lookup, writeTuples } from './authz.service.ts';

const tags = ['Authorization'];

export const authzRouter = router({
  tuples: router({
    write: secretKeyProcedure('authz:write')
      .meta({
        openapi: {
          method: 'POST',
          path: '/v1/authz/tuples',
          tags,
          summary: 'Write and delete relationship tuples atomically',
          description:
            'Up to 1,000 writes and deletes together, all applied or none. Writing an existing tuple or deleting a missing ' +
            'one changes nothing. Answers the consistency token of the batch.',
        },
      })
      .input(WriteTuplesInputSchema)
      .output(WriteTuplesResultSchema)
      .mutation(({ ctx, input }) => writeTuples(ctx, input)),
    list: secretKeyProcedure('authz:read')
      .meta({ openapi: { method: 'GET', path: '/v1/authz/tuples', tags, summary: 'List relationship tuples, newest first' } })
      .input(ListTuplesInputSchema)
      .output(TuplePageSchema)
      .query(({ ctx, input }) => listTuples(ctx, input)),
  }),
  check: secretKeyInStatementProcedure('authz:read')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/authz/check',
        tags,
        summary: 'Check whether a subject has a relation to an object',
        description: `Subject sets are expanded recursively (cycle-safe) up to 25 levels; deeper is 422 depth_limit_exceeded.`,
      },
    })
    .input(CheckInputSchema)
    .output(CheckResultSchema)
    .mutation(({ ctx, input }) => check(ctx, input)),
  expand: secretKeyProcedure('authz:read')
    .meta({ openapi: { method: 'POST', path: '/v1/authz/expand', tags, summary: 'The subject tree of an object#relation' } })
    .input(ExpandInputSchema)
    .output(ExpandResultSchema)
    .mutation(({ ctx, input }) => expand(ctx, input)),
  lookup: secretKeyProcedure('authz:read')
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/authz/lookup',
        tags,
        summary: 'The objects of a namespace a subject has a relation to',
      },
    })
    .input(LookupInputSchema)
    .output(LookupPageSchema)
    .mutation(({ ctx, input }) => lookup(ctx, input)),
  relations: signedInProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/authz/relations',
        tags,
        summary: "The signed-in user's relationship tuples, newest first",
      },
    })
    .input(ListRelationsInputSchema)
    .output(RelationPageSchema)
    .query(({ ctx, input }) => listRelations(ctx, input)),
});
