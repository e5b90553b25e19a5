import { AppError } from '../../errors.ts';
import { settingsOf } from '../applications/applications.service.ts';
import type { TenantContext } from '../applications/contexts.ts';
import { missingConsents, recordConsents } from '../consent/consent.service.ts';
import { completeSignIn, consumePendingToken, peekPendingToken } from './sign-in.service.ts';

/**
 * S4: records the acceptances and resumes the sign-in. `doc_types` must cover every document still missing (else
 * 422 `consent_incomplete`, and the pending token stays valid); the pending token is consumed only on success.
 */
export async function acceptConsent(ctx: TenantContext, input: { pending_token: string; doc_types?: string[] }) {
  const application = ctx.application;
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
    await recordConsents(em, application.id, subject.user.id, documents);
    return subject;
  });
}
