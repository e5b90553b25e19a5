import { randomBytes } from 'node:crypto';
import { enabledOAuthProviders, hasSsoConnection, type OAuthProviderName, providerLabel, settingsOf } from '@gatehouse/api';
import type { MessageKey } from './catalog.ts';
import { type Html, html } from './html.ts';
import { type Hosted, type SignInResult, signedInApi } from './request.ts';
import { type Flow, writeFlow } from './state.ts';

/**
 * What the sign-in step needs of the federated factors, without their routes (federated-routes.ts): the social
 * buttons and the sign-up link under the email form, enterprise SSO for an email whose domain has a SAML connection,
 * the name typed at sign-up, and whether the organization picker comes before continuing.
 */

export const signUpOpen = (h: Hosted) => settingsOf(h.application).sign_up === 'open';

/**
 * The origin of this page: the service's, or on a custom domain that domain's (a hop returns to the host that holds
 * its flow cookie; the API allows the application's verified domains as redirect targets).
 */
const pageOrigin = (h: Hosted) =>
  h.base ? h.services.baseUrl : `${new URL(h.services.baseUrl).protocol}//${h.request.headers.host ?? ''}`;

/** The `redirect_uri` of an SSO hop: the hosted callback, with the secret this browser's flow cookie holds. */
export const ssoCallbackUri = (h: Hosted, hop: string) => `${pageOrigin(h)}${h.base}/sso/callback?hop=${hop}`;
export const oauthCallbackUri = (h: Hosted) => `${pageOrigin(h)}${h.base}/oauth/callback`;

/** A flow without a finished hop's secrets. */
export const withoutHops = ({ sso_hop: _sso, oauth_provider: _provider, oauth_state_hash: _state, ...flow }: Flow): Flow => flow;

/** Under the sign-in (or sign-up) form: a button per enabled social provider, and the link to the other page. */
export async function federatedBlock(h: Hosted, on: 'sign_in' | 'sign_up'): Promise<Html> {
  const { t } = h.frame;
  const providers = await enabledOAuthProviders(h.services.orm.em.fork(), h.application.id);
  const buttons = providers.length
    ? html`<p class="muted">${t('federated.social.or')}</p>
<div class="stack" aria-label="${t('federated.social.group')}" role="group">
${providers.map(
  (provider) => html`<form method="post" action="${h.base}/oauth/start">
<input type="hidden" name="csrf" value="${h.csrf}">
<input type="hidden" name="provider" value="${provider}">
<button type="submit" class="secondary" id="social-${provider}">${t('federated.social.continue_with', { provider: providerLabel(provider) })}</button>
</form>`,
)}
</div>`
    : '';
  const other =
    on === 'sign_up'
      ? html`<p class="muted">${t('sign_up.have_account')} <a href="${h.base}/sign-in">${t('sign_up.sign_in_link')}</a></p>`
      : signUpOpen(h)
        ? html`<p class="muted">${t('sign_in.no_account')} <a href="${h.base}/sign-up">${t('sign_in.sign_up_link')}</a></p>`
        : '';
  return html`${buttons}${other}`;
}

/**
 * Enterprise SSO, identifier first: when the email's domain has an enabled SAML connection, starts the hop (a fresh
 * secret in the flow cookie and in the hosted callback's redirect_uri, which the code is bound to) and answers the
 * IdP's URL to send the browser to. Undefined when the domain has none: the magic link is next.
 */
export async function startSsoIfConnected(h: Hosted, email: string, flow: Flow): Promise<string | undefined> {
  if (!(await hasSsoConnection(h.services.hooks, h.services.orm.em.fork(), h.application.id, email))) return undefined;
  const hop = randomBytes(32).toString('base64url');
  const { redirect_url } = await h.api.auth.sso.start({ email, redirect_uri: ssoCallbackUri(h, hop) });
  writeFlow(h.services, h.reply, h.application.id, {
    interaction: flow.interaction,
    organization: flow.organization,
    name: flow.name,
    invitation: flow.invitation,
    sso_hop: hop,
  });
  return redirect_url;
}

/**
 * After a complete sign-in that began on the sign-up page: the name typed there goes into the profile — only when the
 * profile has none (an existing account that signs in through the sign-up page keeps its own). A failure here does not
 * undo the sign-in.
 */
export async function rememberSignUpName(h: Hosted, flow: Flow, result: SignInResult) {
  if (result.status !== 'complete' || !flow.name) return;
  const profile = result.user.profile ?? {};
  if (typeof profile.name === 'string' && profile.name) return;
  try {
    await signedInApi(h, result.tokens.access_token).auth.me.update({ profile: { ...profile, name: flow.name } });
  } catch (error) {
    h.request.log.warn({ err: error }, 'the sign-up name was not stored');
  }
}

/**
 * Whether the person chooses an organization before continuing: the sign-in URL says `organization=select`, or the
 * OAuth client's interaction asks for the `organization` scope.
 */
export async function organizationRequested(h: Hosted, query: Record<string, string | undefined>): Promise<boolean> {
  if (query.organization === 'select') return true;
  if (!query.interaction) return false;
  try {
    const interaction = await h.api.auth.oauth2.interaction({ uid: query.interaction });
    return interaction.scopes.some((scope) => scope.name === 'organization');
  } catch {
    // An unknown or expired interaction: the sign-in page says so when it continues.
    return false;
  }
}

export const isProvider = (providers: readonly OAuthProviderName[], value: string | undefined): value is OAuthProviderName =>
  providers.some((provider) => provider === value);

/** The catalog key of a provider's or IdP's `error` on the way back. */
export const hopErrorKey = (error: string): MessageKey =>
  error === 'access_denied' ? 'error.access_denied' : 'federated.failed';
