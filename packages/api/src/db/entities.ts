import { ApiKeyEntity } from '../modules/api-keys/api-key.entity.ts';
import { ApplicationEntity } from '../modules/applications/application.entity.ts';
import { EventEntity } from '../modules/events/event.entity.ts';
import { MembershipEntity } from '../modules/organizations/membership.entity.ts';
import { OrganizationEntity } from '../modules/organizations/organization.entity.ts';
import { UserEntity } from '../modules/users/user.entity.ts';

/** Every table the service owns. A new module adds its entities here. */
export const entities = [ApplicationEntity, ApiKeyEntity, UserEntity, OrganizationEntity, MembershipEntity, EventEntity];
