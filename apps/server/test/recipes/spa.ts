import { UserManager, WebStorageStateStore } from 'oidc-client-ts';

export interface GatehouseSettings {
  /** `{GATEHOUSE_BASE_URL}/oauth2/{application_id}` */
  issuer: string;
  /** A public client (no secret): its redirect URI is `${appUrl}/callback`. */
  clientId: string;
  /** Where this app is served. */
  appUrl: string;
}

/** The whole single-page app: `/callback` finishes a sign-in, every other path shows who is signed in. */
export async function startSpa(settings: GatehouseSettings, root: HTMLElement): Promise<void> {
  const userManager = new UserManager({
    authority: settings.issuer,
    client_id: settings.clientId,
    redirect_uri: `${settings.appUrl}/callback`,
    response_type: 'code',
    scope: 'openid email organization offline_access',
    // A refresh token (offline_access) is granted after the consent prompt.
    prompt: 'consent',
    // email and the organization claims come from userinfo.
    loadUserInfo: true,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
  });

  if (location.pathname === '/callback') {
    await userManager.signinRedirectCallback();
    history.replaceState(null, '', '/');
  }

  let user = await userManager.getUser();
  // An expired access token is renewed with the refresh token (which rotates; the library keeps the new one).
  if (user?.expired && user.refresh_token) user = await userManager.signinSilent();

  if (!user) {
    const button = document.createElement('button');
    button.id = 'sign-in';
    button.textContent = 'Sign in';
    button.onclick = () => void userManager.signinRedirect();
    root.replaceChildren(button);
    return;
  }
  const { sub, email, org, org_role } = user.profile;
  const signedIn = document.createElement('pre');
  signedIn.id = 'signed-in';
  signedIn.textContent = JSON.stringify({ user: { sub, email, org, org_role }, expires_at: user.expires_at });
  root.replaceChildren(signedIn);
}
