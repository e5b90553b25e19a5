import { defineModule } from '../../lib/modules.ts';
import { signInChecks } from '../sign-in/sign-in.service.ts';
import { AccessRuleEntity } from './access-rule.entity.ts';
import { accessRulesRouter } from './access-rules.router.ts';
import { hostAccessCheck } from './access-rules.service.ts';
import { HostEntity } from './host.entity.ts';
import { HostGroupEntity } from './host-group.entity.ts';

/** Hosts, host groups and the rules that decide who may sign in to them (a sign-in check). */
export const accessRulesModule = defineModule({
  name: 'access-rules',
  entities: [HostGroupEntity, HostEntity, AccessRuleEntity],
  procedures: { access: accessRulesRouter },
  tag: {
    name: 'Host access rules',
    description:
      'Hosts, host groups and the allow/deny rules deciding who may sign in to them; sign-in honours them and the access token carries `host`.',
  },
  hooks: [signInChecks.entry('host_access_rules', hostAccessCheck)],
});
