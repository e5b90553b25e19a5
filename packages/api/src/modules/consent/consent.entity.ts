import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { ApplicationEntity } from '../applications/application.entity.ts';
import { UserEntity } from '../users/user.entity.ts';

/** One acceptance of one version of one consent document by one user. */
export const ConsentEntity = defineEntity({
  name: 'Consent',
  tableName: 'consents',
  properties: {
    id: p.uuid().primary(),
    application: () => p.manyToOne(ApplicationEntity).mapToPk().deleteRule('cascade'),
    user: () => p.manyToOne(UserEntity).mapToPk().deleteRule('cascade'),
    docType: p.string().length(64),
    version: p.string().length(64),
    acceptedAt: p.datetime().onCreate(() => new Date()),
  },
  uniques: [{ name: 'consents_user_doc_version_unique', properties: ['user', 'docType', 'version'] }],
});
export type Consent = InferEntity<typeof ConsentEntity>;
