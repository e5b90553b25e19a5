import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { samlRouter, ssoRouter } from './saml.router.ts';
import { SamlConnectionSchema } from './saml.schema.ts';
import { SamlAssertionEntity } from './saml-assertion.entity.ts';
import { SamlCodeEntity } from './saml-code.entity.ts';
import { SamlConnectionEntity } from './saml-connection.entity.ts';
import { SamlRequestEntity } from './saml-request.entity.ts';
import { purgeSamlAssertions, purgeSamlCodes, purgeSamlRequests } from './sso.service.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'saml_connection.created': SamlConnectionSchema,
  'saml_connection.updated': SamlConnectionSchema,
  'saml_connection.deleted': SamlConnectionSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** SAML connections and enterprise single sign-on. */
export const samlModule = defineModule({
  name: 'saml',
  entities: [SamlConnectionEntity, SamlRequestEntity, SamlAssertionEntity, SamlCodeEntity],
  procedures: { saml: samlRouter, auth: { sso: ssoRouter } },
  tag: {
    name: 'SAML SSO',
    description:
      "Enterprise single sign-on: one SAML connection per customer IdP (from its metadata), our SP metadata for the IdP's administrator. The browser's side is `/v1/auth/sso/*`.",
  },
  hooks: [
    purgeSteps.entry('saml_requests', purgeSamlRequests),
    purgeSteps.entry('saml_codes', purgeSamlCodes),
    purgeSteps.entry('saml_assertions', purgeSamlAssertions),
  ],
  events,
});
