import { browserAccessToken } from '@gatehouse/api';
import { accountPage } from './pages.ts';
import { accountPasskeys } from './passkeys.ts';
import { currentSession, type Hosted, redirect, send, signedInApi } from './request.ts';

/** The account page: who is signed in in this browser (the API's own `auth.me.get`, with the session's access token). */
export async function showAccount(h: Hosted) {
  const session = await currentSession(h);
  if (!session) return redirect(h, `${h.base}/sign-in`);
  const { access_token } = await browserAccessToken(h.services.orm.em.fork(), h.services, h.application, session);
  const api = signedInApi(h, access_token);
  const me = await api.auth.me.get();
  return send(h, 200, accountPage(h, me, await accountPasskeys(h, api)));
}
