import type { Context } from '../../context.ts';
import type { EntityManager } from '../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { newId } from '../../lib/ids.ts';
import type { Application } from '../applications/application.entity.ts';
import { settingsOf } from '../applications/applications.service.ts';
import { completeSignIn, consumePendingToken, peekPendingToken } from '../sign-in/sign-in.service.ts';
import { registerMergeStep } from '../users/users.merge.ts';
import { ConsentEntity } from './consent.entity.ts';

/** The consent documents whose current version the user has not accepted. */
export async function missingConsents(em: EntityManager, application: Application, userId: string) {
  const documents = settingsOf(application).consent_documents;
  if (!documents.length) return [];
  const accepted = await em.find(ConsentEntity, { user: userId, docType: { $in: documents.map((d) => d.doc_type) } });
  const has = new Set(accepted.map((c) => `${c.docType}\u0000${c.version}`));
  return documents.filter((d) => !has.has(`${d.doc_type}\u0000${d.version}`));
}

/**
 * S4: records the acceptances and resumes the sign-in. `doc_types` must cover every document still missing (else
 * 422 `consent_incomplete`, and the pending token stays valid); the pending token is consumed only on success.
 */
export async function acceptConsent(ctx: Context, input: { pending_token: string; doc_types?: string[] }) {
  const application = ctx.application!;
  const peeked = await peekPendingToken(ctx.em, application, { token: input.pending_token }, 'consent');
  const missing = await missingConsents(ctx.em, application, peeked.user);
  const given = new Set(input.doc_types ?? []);
  const uncovered = missing.filter((d) => !given.has(d.doc_type));
  if (uncovered.length || given.size === 0) {
    throw new AppError(
      'consent_incomplete',
      'Every listed document must be accepted',
      uncovered.map((d) => ({ path: 'doc_types', message: `${d.doc_type} (version ${d.version}) not accepted` })),
    );
  }
  const documents = settingsOf(application).consent_documents.filter((d) => given.has(d.doc_type));
  return completeSignIn(ctx, application, async (em) => {
    const subject = await consumePendingToken(em, application, { token: input.pending_token }, 'consent');
    for (const doc of documents) {
      await em.execute(
        `insert into consents (id, application_id, user_id, doc_type, version, accepted_at) values (?, ?, ?, ?, ?, now())
         on conflict (user_id, doc_type, version) do nothing`,
        [newId(), application.id, subject.user.id, doc.doc_type, doc.version],
      );
    }
    return subject;
  });
}

/** Merge: the source's acceptances move to the target, unless the target accepted the same version. */
registerMergeStep('consents', async (em, { sourceUserId, targetUserId }) => {
  await em.execute(
    `delete from consents s where s.user_id = ? and exists
       (select 1 from consents t where t.user_id = ? and t.doc_type = s.doc_type and t.version = s.version)`,
    [sourceUserId, targetUserId],
  );
  await em.nativeUpdate(ConsentEntity, { user: sourceUserId }, { user: targetUserId });
});
