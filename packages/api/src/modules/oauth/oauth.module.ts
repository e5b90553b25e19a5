import { purgeSteps } from '../../lib/housekeeping.ts';
import { defineModule, type EventDeclarations, type EventPayloadsOf } from '../../lib/modules.ts';
import { identitiesRouter, oauthRouter, providersRouter, userIdentitiesRouter } from './oauth.router.ts';
import { IdentityEventSchema } from './oauth.schema.ts';
import { purgeOAuthStates } from './oauth-flow.service.ts';
import { OAuthProviderEntity } from './oauth-provider.entity.ts';
import { OAuthProviderTokenEntity } from './oauth-provider-token.entity.ts';
import { OAuthStateEntity } from './oauth-state.entity.ts';

/** The events this module emits, with their payload schemas. */
const events = {
  'user.identity_linked': IdentityEventSchema,
  'user.identity_unlinked': IdentityEventSchema,
} satisfies EventDeclarations;

declare module '../events/events.schema.ts' {
  interface EventPayloads extends EventPayloadsOf<typeof events> {}
}

/** Social sign-in: providers per application, the browser flow and linked identities. */
export const oauthModule = defineModule({
  name: 'oauth',
  entities: [OAuthProviderEntity, OAuthStateEntity, OAuthProviderTokenEntity],
  procedures: {
    providers: providersRouter,
    auth: { oauth: oauthRouter, identities: identitiesRouter },
    users: { identities: userIdentitiesRouter },
  },
  tag: {
    name: 'OAuth providers',
    description:
      "Social sign-in per application: Google, GitHub, Microsoft, Apple, GitLab, Discord, Slack, LinkedIn and any OpenID Connect issuer (`oidc`); development applications may use the operator's shared credentials. The browser's side is `/v1/auth/oauth/*`.",
  },
  hooks: [purgeSteps.entry('oauth_states', purgeOAuthStates)],
  events,
});
