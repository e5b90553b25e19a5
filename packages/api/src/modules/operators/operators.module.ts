import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { bearerCredentials } from '../api-keys/api-keys.service.ts';
import { operatorCredentials } from '../applications/callers.ts';
import { signInChecks } from '../sign-in/sign-in.service.ts';
import { OperatorEntity } from './operator.entity.ts';
import { OperatorRoleEntity } from './operator-role.entity.ts';
import { consoleBearer, consoleOperator } from './operators.credential.ts';
import { operatorsRouter } from './operators.router.ts';
import { OperatorSchema } from './operators.schema.ts';
import { consoleOperatorCheck } from './operators.service.ts';

/** The events this module emits (in the console application's log), with their payload schemas. */
const events = {
  'operator.created': OperatorSchema,
  'operator.updated': OperatorSchema,
  'operator.deleted': OperatorSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/**
 * The console's operators: people, users of the reserved console application, with roles per application. Their
 * console access token is accepted by the secret-key and operator procedures through the registries those own.
 */
export const operatorsModule = defineModule({
  name: 'operators',
  entities: [OperatorEntity, OperatorRoleEntity],
  procedures: { operators: operatorsRouter },
  tag: {
    name: 'Operators',
    description:
      'The people who run Gatehouse through the console, and their roles per application. Managed with the operator token (or by an instance-wide owner).',
  },
  hooks: [
    bearerCredentials.entry('console_operator', consoleBearer),
    operatorCredentials.entry('console_operator', consoleOperator),
    signInChecks.entry('console_operators_only', consoleOperatorCheck),
  ],
  events,
});
