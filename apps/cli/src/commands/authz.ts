import type { RelationshipTuple } from '@gatehouse/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { pageInput, pageOptions } from '../args.ts';
import { secretKeyClient } from '../context.ts';
import { exitNoUnless, present } from '../output.ts';
import { type Column, pageSummary, recordView, tableView } from '../ui/view.ts';

const columns: Column<RelationshipTuple>[] = [
  { key: 'object', header: 'OBJECT', value: (t) => t.object },
  { key: 'relation', header: 'RELATION', value: (t) => t.relation },
  { key: 'subject', header: 'SUBJECT', value: (t) => t.subject },
  { key: 'created_at', header: 'CREATED', value: (t) => t.created_at },
];

interface Tuple {
  object: string;
  relation: string;
  subject: string;
}

/**
 * A tuple in Zanzibar's notation, `object#relation@subject` (`doc:readme#viewer@user:<id>`,
 * `doc:readme#viewer@group:eng#member`). Only its shape is read here; the server checks the parts.
 */
function parseTuple(value: string, previous: Tuple[] = []): Tuple[] {
  const match = /^([^#@\s]+)#([^#@\s]+)@(\S+)$/.exec(value.trim());
  if (!match) throw new InvalidArgumentError('expected object#relation@subject, e.g. doc:readme#viewer@user:<id>.');
  return [...previous, { object: match[1]!, relation: match[2]!, subject: match[3]! }];
}

export function registerAuthz(program: Command): void {
  const authz = program.command('authz').description('Relationship tuples: write, list, check, expand, lookup');

  authz
    .command('write')
    .description('Write and delete tuples in one atomic batch (object#relation@subject), answering a consistency token')
    .argument('[tuples...]', 'tuples to write, e.g. doc:readme#viewer@group:eng#member', parseTuple, [])
    .option('--delete <tuple>', 'a tuple to delete (repeatable)', parseTuple, [])
    .action(async (writes: Tuple[], options: { delete: Tuple[] }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Writing tuples',
        () => gatehouse.authz.tuples.write({ writes, deletes: options.delete }),
        (result) => recordView(result),
      );
    });

  pageOptions(
    authz
      .command('tuples')
      .description('List tuples, newest first')
      .option('--object <object>', 'only this object (namespace:id)')
      .option('--namespace <namespace>', 'only objects of this namespace')
      .option('--relation <relation>', 'only this relation')
      .option('--subject <subject>', 'only this subject (user:<id> or namespace:id#relation)'),
  ).action(
    async (
      options: { object?: string; namespace?: string; relation?: string; subject?: string; limit?: number; offset?: number },
      command: Command,
    ) => {
      const gatehouse = await secretKeyClient(command);
      const { limit, offset, ...filters } = options;
      await present(
        command,
        'Listing tuples',
        () => gatehouse.authz.tuples.list({ ...filters, ...pageInput({ limit, offset }) }),
        (page) => tableView(columns, page.tuples, 'No tuples.', pageSummary(page, page.tuples.length)),
      );
    },
  );

  authz
    .command('check')
    .description('Check a tuple (object#relation@subject): prints allowed (exit 0) or denied (exit 3)')
    .argument('<tuple>', 'e.g. doc:readme#viewer@user:<id>', (value: string) => parseTuple(value)[0]!)
    .option('--at-least-as-fresh <token>', 'a consistency token a write answered')
    .action(async (question: Tuple, options: { atLeastAsFresh?: string }, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      const consistency = options.atLeastAsFresh
        ? { mode: 'at_least_as_fresh' as const, token: options.atLeastAsFresh }
        : undefined;
      const result = await present(
        command,
        'Checking',
        () => gatehouse.authz.check({ ...question, ...(consistency ? { consistency } : {}) }),
        (answer) => ({ kind: 'message', text: answer.allowed ? 'allowed' : 'denied' }),
      );
      exitNoUnless(result.allowed);
    });

  authz
    .command('expand')
    .description('Show every userset an object#relation reaches, with its direct subjects')
    .argument('<object>', 'namespace:id')
    .argument('<relation>', 'relation')
    .action(async (object: string, relation: string, _options, command: Command) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Expanding',
        () => gatehouse.authz.expand({ object, relation }),
        (tree) =>
          tableView(
            [
              { key: 'userset', header: 'USERSET', value: (u) => u.userset },
              { key: 'depth', header: 'DEPTH', value: (u) => u.depth },
              { key: 'subjects', header: 'SUBJECTS', value: (u) => u.subjects },
            ],
            tree.usersets,
            'Nothing.',
          ),
      );
    });

  pageOptions(
    authz
      .command('lookup')
      .description('List the objects of a namespace a subject has a relation to')
      .argument('<subject>', 'user:<id> or namespace:id#relation')
      .argument('<relation>', 'relation')
      .argument('<namespace>', 'object namespace'),
  ).action(
    async (
      subject: string,
      relation: string,
      namespace: string,
      options: { limit?: number; offset?: number },
      command: Command,
    ) => {
      const gatehouse = await secretKeyClient(command);
      await present(
        command,
        'Looking up',
        () => gatehouse.authz.lookup({ subject, relation, namespace, ...pageInput(options) }),
        (page) =>
          tableView(
            [{ key: 'object', header: 'OBJECT', value: (o: string) => o }],
            page.objects,
            'No objects.',
            pageSummary(page, page.objects.length),
          ),
      );
    },
  );
}
