import { type Hosted, redirect, signedInApi } from './request.ts';
import { type Flow, writeFlow } from './state.ts';

/**
 * MFA enrolment where the application requires it (`settings.mfa` = required): a session opened by someone with no
 * second factor carries `mfa_enrollment_required`, and the sign-in continues on the enrolment page (an authenticator
 * app, its QR code) before the client that asked gets it. The account page refuses everything else meanwhile.
 */
export async function enrolmentRequired(h: Hosted, accessToken: string): Promise<boolean> {
  return (await signedInApi(h, accessToken).auth.session.get()).mfa_enrollment_required;
}

/** Starts enrolling an authenticator app: the seed waits in the sealed flow cookie until a first code confirms it. */
export async function startTotpEnrolment(h: Hosted, flow: Flow, accessToken: string) {
  const totp = await signedInApi(h, accessToken).auth.mfa.totp.enroll({});
  writeFlow(h.services, h.reply, h.application.id, { interaction: flow.interaction, organization: flow.organization, totp });
  return redirect(h, `${h.base}/account/totp`);
}
