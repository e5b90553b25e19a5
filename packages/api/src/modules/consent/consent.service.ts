import type { EntityManager } from '../../db/orm.ts';
import { newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { MergeStep } from '../users/users.merge.ts';
import { ConsentEntity } from './consent.entity.ts';

/** The consent documents whose current version the user has not accepted. */
export async function missingConsents(em: EntityManager, application: Application, userId: string) {
  const documents = settingsOf(application).consent_documents;
  if (!documents.length) return [];
  const accepted = await em.find(ConsentEntity, { user: userId, docType: { $in: documents.map((d) => d.doc_type) } });
  const has = new Set(accepted.map((c) => `${c.docType}\u0000${c.version}`));
  return documents.filter((d) => !has.has(`${d.doc_type}\u0000${d.version}`));
}

/** Records the user's acceptance of these documents (an acceptance already stored stays as it was). */
export async function recordConsents(
  em: EntityManager,
  applicationId: string,
  userId: string,
  documents: Array<{ doc_type: string; version: string }>,
): Promise<void> {
  for (const doc of documents) {
    await em.execute(
      `insert into consents (id, application_id, user_id, doc_type, version, accepted_at) values (?, ?, ?, ?, ?, now())
       on conflict (user_id, doc_type, version) do nothing`,
      [newId(), applicationId, userId, doc.doc_type, doc.version],
    );
  }
}

/** Merge: the source's acceptances move to the target, unless the target accepted the same version. */
export const mergeConsents: MergeStep = async (em, { sourceUserId, targetUserId }) => {
  await em.execute(
    `delete from consents s where s.user_id = ? and exists
       (select 1 from consents t where t.user_id = ? and t.doc_type = s.doc_type and t.version = s.version)`,
    [sourceUserId, targetUserId],
  );
  await em.nativeUpdate(ConsentEntity, { user: sourceUserId }, { user: targetUserId });
};
