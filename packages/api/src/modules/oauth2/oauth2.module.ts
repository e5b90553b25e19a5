import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { banSteps } from '../users/users.hooks.ts';
import { mergeSteps } from '../users/users.merge.ts';
import { interactionRouter, myGrantsRouter, oauth2Router, userGrantsRouter } from './oauth2.router.ts';
import { GrantCreatedEventSchema, GrantRevokedEventSchema } from './oauth2.schema.ts';
import { mergeOAuth2Grants, purgeOAuth2Artifacts, purgeOAuth2Grants, revokeOAuth2GrantsOnBan } from './oauth2.service.ts';
import { OAuth2ArtifactEntity } from './oauth2-artifact.entity.ts';
import { OAuth2ClientEntity } from './oauth2-client.entity.ts';
import { OAuth2GrantEntity } from './oauth2-grant.entity.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'oauth2_grant.created': GrantCreatedEventSchema,
  'oauth2_grant.revoked': GrantRevokedEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** The application as an OAuth 2.1 / OpenID Connect provider: clients, the interaction, grants. */
export const oauth2Module = defineModule({
  name: 'oauth2',
  entities: [OAuth2ClientEntity, OAuth2GrantEntity, OAuth2ArtifactEntity],
  procedures: {
    oauth2: oauth2Router,
    users: { grants: userGrantsRouter },
    auth: { oauth2: interactionRouter, me: { grants: myGrantsRouter } },
  },
  tag: {
    name: 'OAuth 2.0 provider',
    description:
      'The application as an OAuth 2.1 / OpenID Connect provider for third-party apps and AI agents: clients, the login and consent interaction its sign-in page runs, and the grants users gave. The protocol endpoints themselves live under the issuer `/oauth2/{application_id}` (discovery at `/.well-known/openid-configuration` there).',
  },
  hooks: [
    mergeSteps.entry('oauth2_grants', mergeOAuth2Grants),
    banSteps.entry('oauth2_grants', revokeOAuth2GrantsOnBan),
    purgeSteps.entry('oauth2_artifacts', purgeOAuth2Artifacts),
    purgeSteps.entry('oauth2_grants', purgeOAuth2Grants),
  ],
  events,
});
