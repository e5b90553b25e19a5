import { IdempotencyKeyEntity } from './db/idempotency-key.entity.ts';
import { type DatabaseConfig, type Orm, openOrm } from './db/orm.ts';
import { RateLimitEntity } from './db/rate-limit.entity.ts';
import { AccessRuleEntity, HostEntity, HostGroupEntity } from './modules/access-rules/access-rules.entity.ts';
import { ApiKeyEntity } from './modules/api-keys/api-key.entity.ts';
import { ApplicationEntity } from './modules/applications/application.entity.ts';
import { AuthzTupleEntity } from './modules/authz/authz-tuple.entity.ts';
import { PlanEntity, SubscriptionEntity } from './modules/billing/billing.entity.ts';
import { ConsentEntity } from './modules/consent/consent.entity.ts';
import { CustomDomainEntity } from './modules/domains/domain.entity.ts';
import { EventEntity } from './modules/events/event.entity.ts';
import { MessageEntity } from './modules/messages/message.entity.ts';
import { MfaBackupCodeEntity, MfaFactorEntity } from './modules/mfa/mfa-factor.entity.ts';
import { OAuthProviderEntity, OAuthProviderTokenEntity, OAuthStateEntity } from './modules/oauth/oauth.entity.ts';
import { OAuth2ArtifactEntity, OAuth2ClientEntity, OAuth2GrantEntity } from './modules/oauth2/oauth2.entity.ts';
import { MembershipEntity } from './modules/organizations/membership.entity.ts';
import { OrganizationEntity } from './modules/organizations/organization.entity.ts';
import { WebauthnChallengeEntity } from './modules/passkeys/webauthn-challenge.entity.ts';
import { SamlAssertionEntity, SamlCodeEntity, SamlConnectionEntity, SamlRequestEntity } from './modules/saml/saml.entity.ts';
import { RefreshTokenEntity, SessionEntity } from './modules/sessions/session.entity.ts';
import { MagicLinkEntity } from './modules/sign-in/magic-link/magic-link.entity.ts';
import { PendingTokenEntity } from './modules/sign-in/pending-token.entity.ts';
import { SigningKeyEntity } from './modules/signing-keys/signing-key.entity.ts';
import { TemplateOverrideEntity } from './modules/templates/template.entity.ts';
import { IdentityEntity } from './modules/users/identity.entity.ts';
import { UserEntity } from './modules/users/user.entity.ts';
import { WebhookAttemptEntity, WebhookDeliveryEntity, WebhookEndpointEntity } from './modules/webhooks/webhook.entity.ts';

/** Every table the service owns. A new module adds its entities here (the composition root, above every module). */
export const entities = [
  ApplicationEntity,
  ApiKeyEntity,
  UserEntity,
  OrganizationEntity,
  MembershipEntity,
  EventEntity,
  SigningKeyEntity,
  SessionEntity,
  RefreshTokenEntity,
  PendingTokenEntity,
  MagicLinkEntity,
  ConsentEntity,
  MessageEntity,
  TemplateOverrideEntity,
  RateLimitEntity,
  IdempotencyKeyEntity,
  MfaFactorEntity,
  MfaBackupCodeEntity,
  IdentityEntity,
  WebauthnChallengeEntity,
  SamlConnectionEntity,
  SamlRequestEntity,
  SamlAssertionEntity,
  SamlCodeEntity,
  OAuthProviderEntity,
  OAuthStateEntity,
  OAuthProviderTokenEntity,
  WebhookEndpointEntity,
  WebhookDeliveryEntity,
  WebhookAttemptEntity,
  CustomDomainEntity,
  AuthzTupleEntity,
  PlanEntity,
  SubscriptionEntity,
  HostGroupEntity,
  HostEntity,
  AccessRuleEntity,
  OAuth2ClientEntity,
  OAuth2GrantEntity,
  OAuth2ArtifactEntity,
];

/** The service's database: the kernel's ORM over every module's entities. */
export const createOrm = (db: DatabaseConfig): Promise<Orm> => openOrm(db, entities);
