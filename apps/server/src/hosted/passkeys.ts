import { browserAccessToken, errorBody } from '@gatehouse/api';
import type { FastifyInstance } from 'fastify';
import { errorPage, mfaPage, signInPage } from './pages.ts';
import { passkeysOffered, passkeysSection, relyingPartyFits } from './passkeys-ui.ts';
import {
  type Caller,
  currentSession,
  type Form,
  type Hosted,
  messageFor,
  type Routes,
  redirect,
  send,
  signedInApi,
} from './request.ts';
import { proceed } from './sign-in.ts';
import { bindToBrowser, boundToBrowser, readFlow } from './state.ts';

type Handler = (h: Hosted, form: Form) => Promise<unknown>;

/**
 * Passkeys on the hosted pages. Each ceremony has two routes: `…/options` (the script's fetch, CSRF-checked; it
 * answers the API's options, the ceremony's state and that state's binding to this browser) and the form the script
 * submits with the credential, which checks the binding, calls the API's finish and continues as every factor does
 * (`proceed` for a sign-in or second factor; the account page for a new passkey). The API spends each state once.
 */
export function registerPasskeyRoutes(pages: FastifyInstance, { post }: Routes) {
  pages.post('/a/:applicationId/passkeys/sign-in/options', post(offered(signInOptions)));
  pages.post('/a/:applicationId/passkeys/sign-in', post(offered(signInFinish)));
  pages.post('/a/:applicationId/passkeys/mfa/options', post(fits(mfaOptions)));
  pages.post('/a/:applicationId/passkeys/mfa', post(fits(mfaFinish)));
  pages.post('/a/:applicationId/passkeys/register/options', post(offered(registerOptions)));
  pages.post('/a/:applicationId/passkeys/register', post(offered(registerFinish)));
  pages.post('/a/:applicationId/passkeys/remove', post(removePasskey));
}

const notFound = (h: Hosted) => send(h, 404, errorPage(h.frame, h.request.id, 'error.not_found'));
/** Passkeys as a first factor and adding one: `settings.sign_in.passkeys` (else 404, as a page that does not exist). */
const offered =
  (handler: Handler): Handler =>
  async (h, form) =>
    passkeysOffered(h) ? handler(h, form) : notFound(h);
/** A second factor the person already has: whenever the relying party fits the pages. */
const fits =
  (handler: Handler): Handler =>
  async (h, form) =>
    relyingPartyFits(h) ? handler(h, form) : notFound(h);

const PURPOSE = { signIn: 'passkey-sign-in', mfa: 'passkey-mfa', register: 'passkey-register' } as const;
type Purpose = (typeof PURPOSE)[keyof typeof PURPOSE];

/** The options for the script, with the state bound to this browser (its CSRF cookie). */
function ceremony(h: Hosted, purpose: Purpose, started: { options: unknown; state: string }) {
  const binding = bindToBrowser(h.services, h.request, h.application.id, purpose, started.state);
  return h.reply.code(200).header('cache-control', 'no-store').send({ options: started.options, state: started.state, binding });
}

/** An options request the API refused: a JSON error for the script (which then says the passkey failed). */
function optionsFailed(h: Hosted, error: unknown) {
  const { status } = messageFor(error, 'passkeys.failed');
  return h.reply
    .code(status)
    .header('cache-control', 'no-store')
    .send({ error: errorBody(error).code });
}

/**
 * The submitted credential and state, when the state was handed out to this browser for this ceremony; undefined
 * for a state from another browser (or none), or a credential that is not JSON.
 */
function submitted(h: Hosted, form: Form, purpose: Purpose): { credential: never; state: string } | undefined {
  const state = form.state ?? '';
  if (!state || !boundToBrowser(h.services, h.request, h.application.id, purpose, state, form.binding)) return undefined;
  try {
    // The API validates the credential's shape (its input schema); here it only has to be JSON.
    return { credential: JSON.parse(form.credential ?? '') as never, state };
  } catch {
    return undefined;
  }
}

async function signInOptions(h: Hosted) {
  try {
    return ceremony(h, PURPOSE.signIn, await h.api.auth.passkeys.signIn.start());
  } catch (error) {
    return optionsFailed(h, error);
  }
}

async function signInFinish(h: Hosted, form: Form) {
  const flow = readFlow(h.services, h.request, h.application.id);
  const input = submitted(h, form, PURPOSE.signIn);
  if (!input) return send(h, 403, signInPage(h, { error: 'passkeys.invalid' }));
  try {
    return await proceed(h, flow, await h.api.auth.passkeys.signIn.finish(input));
  } catch (error) {
    const { status, key } = messageFor(error, 'passkeys.invalid');
    return send(h, status, signInPage(h, { error: key }));
  }
}

async function mfaOptions(h: Hosted, form: Form) {
  try {
    return ceremony(h, PURPOSE.mfa, await h.api.auth.passkeys.mfa.start({ pending_token: form.pending_token ?? '' }));
  } catch (error) {
    return optionsFailed(h, error);
  }
}

async function mfaFinish(h: Hosted, form: Form) {
  const flow = readFlow(h.services, h.request, h.application.id);
  const pending_token = form.pending_token ?? '';
  const methods = (form.methods ?? '').split(',').filter(Boolean);
  const input = submitted(h, form, PURPOSE.mfa);
  if (!input) return send(h, 403, mfaPage(h, { pending_token, methods, error: 'passkeys.invalid' }));
  try {
    return await proceed(h, flow, await h.api.auth.passkeys.mfa.finish(input));
  } catch (error) {
    if (errorBody(error).code === 'invalid_pending_token') {
      return send(h, 401, errorPage(h.frame, h.request.id, 'error.link_invalid', `${h.base}/sign-in`));
    }
    const { status, key } = messageFor(error, 'passkeys.invalid');
    return send(h, status, mfaPage(h, { pending_token, methods, error: key }));
  }
}

/** The API as the person signed in in this browser; undefined without a session. */
async function signedIn(h: Hosted): Promise<Caller | undefined> {
  const session = await currentSession(h);
  if (!session) return undefined;
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  return signedInApi(h, access_token);
}

async function registerOptions(h: Hosted) {
  const api = await signedIn(h);
  if (!api) return h.reply.code(401).header('cache-control', 'no-store').send({ error: 'unauthenticated' });
  try {
    return ceremony(h, PURPOSE.register, await api.auth.passkeys.register.start());
  } catch (error) {
    return optionsFailed(h, error);
  }
}

const account = (h: Hosted, notice: string) => redirect(h, `${h.base}/account?passkeys=${notice}`);

async function registerFinish(h: Hosted, form: Form) {
  const api = await signedIn(h);
  if (!api) return redirect(h, `${h.base}/sign-in`);
  const input = submitted(h, form, PURPOSE.register);
  if (!input) return account(h, 'failed');
  try {
    await api.auth.passkeys.register.finish(input);
    return account(h, 'added');
  } catch {
    return account(h, 'failed');
  }
}

async function removePasskey(h: Hosted, form: Form) {
  const api = await signedIn(h);
  if (!api) return redirect(h, `${h.base}/sign-in`);
  try {
    await api.auth.passkeys.delete({ id: form.id ?? '' });
    return account(h, 'removed');
  } catch (error) {
    return account(h, errorBody(error).code === 'step_up_required' ? 'step_up' : 'failed');
  }
}

/** The account page's passkeys section (a hook of the account page): the list, Remove, and Add when offered. */
export async function accountPasskeys(h: Hosted, api: Caller) {
  const passkeys = await api.auth.passkeys.list();
  return passkeysSection(h, passkeys, (h.request.query as Record<string, unknown>).passkeys);
}
