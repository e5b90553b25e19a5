/**
 * Every string of the hosted pages, per language. English is the reference: each other language must have every key
 * (the type says so). `{name}` placeholders are filled by `translator`; the page escapes the result.
 */
const en = {
  'sign_in.title': 'Sign in to {app}',
  'sign_in.email': 'Email address',
  'sign_in.continue': 'Continue',
  'sign_in.check_email.title': 'Check your email',
  'sign_in.check_email.body':
    'We sent a sign-in link to {email}. Open it on this device or on another one: this page continues by itself.',
  'sign_in.check_email.refresh': 'Check again',
  'sign_in.other_email': 'Use another email address',
  'magic_link.title': 'Continue signing in',
  'magic_link.body': 'Continue signing in to {app}?',
  'magic_link.confirm': 'Yes, sign me in',
  'magic_link.elsewhere.title': 'Confirmed',
  'magic_link.elsewhere.body':
    'Go back to the device where you asked for the link: it continues from there. You can close this tab.',
  'mfa.title': 'Two-step verification',
  'mfa.totp': 'Code from your authenticator app',
  'mfa.backup_code': 'Backup code',
  'mfa.verify': 'Verify',
  'mfa.use_backup_code': 'Use a backup code instead',
  'mfa.use_totp': 'Use your authenticator app instead',
  'consent.title': 'Review and accept',
  'consent.body': 'To continue, read and accept:',
  'consent.accept': 'Accept and continue',
  'passkeys.or': 'or',
  'passkeys.sign_in': 'Sign in with a passkey',
  'passkeys.mfa': 'Use your passkey',
  'passkeys.failed': 'The passkey could not be used. Try again, or use another way.',
  'passkeys.invalid': 'This passkey was not accepted. Try again, or use another way.',
  'passkeys.section': 'Passkeys',
  'passkeys.none': 'You have no passkey yet.',
  'passkeys.add': 'Add a passkey',
  'passkeys.remove': 'Remove',
  'passkeys.remove_label': 'Remove the passkey {name}',
  'passkeys.created': 'Added {date}',
  'passkeys.last_used': 'last used {date}',
  'passkeys.added': 'Passkey added.',
  'passkeys.removed': 'Passkey removed.',
  'passkeys.step_up': 'To remove a passkey, sign in again with a passkey or a second factor.',
  'account.title': 'Your account',
  'account.signed_in_as': 'Signed in as {email}',
  'sign_out.button': 'Sign out',
  'sign_out.title': 'Signed out',
  'sign_out.body': 'You are signed out of {app}.',
  'sign_out.again': 'Sign in again',
  'error.title': 'Something went wrong',
  'error.request_id': 'Request ID: {id}',
  'error.csrf': 'This form has expired. Reload the page and try again.',
  'error.not_found': 'This page does not exist.',
  'error.start_again': 'Start again',
  'error.link_invalid': 'This sign-in link is invalid, has expired or was already used. Ask for a new one.',
  'error.code_invalid': 'That code is not right. Try again.',
  'error.rate_limited': 'Too many attempts. Wait a moment and try again.',
  'error.access_denied': 'You cannot sign in to {app} with this account.',
  'error.email_invalid': 'Enter a valid email address.',
  'error.generic': 'We could not complete this step. Try again.',
  'authorize.title': '{client} wants to use your {app} account',
  'authorize.signed_in_as': 'Signed in as {email}',
  'authorize.scopes': '{client} will be able to:',
  'authorize.allow': 'Allow',
  'authorize.deny': 'Deny',
  'select_account.title': 'Choose an account',
  'select_account.body': 'Which account do you want to use with {client}?',
  'select_account.continue': 'Continue as {email}',
  'select_account.another': 'Use another account',
  'sign_in.step_up': '{client} asks you to confirm it is you with your second factor: sign in again.',
  'error.interaction_invalid':
    'This sign-in request has expired, was already used, or was started in another browser. Go back to the app and try again.',
  'federated.social.group': 'Other ways to sign in',
  'federated.social.or': 'Or continue with',
  'federated.social.continue_with': 'Continue with {provider}',
  'federated.failed': 'We could not sign you in that way. Try again.',
  'federated.other_browser': 'This sign-in was started in another browser, or it has expired. Start again here.',
  'sign_up.title': 'Create your {app} account',
  'sign_up.body':
    'Enter your email address: we email you a link, and your account is created when you open it. If you already have an account, the link signs you in.',
  'sign_up.name': 'Your name (optional)',
  'sign_up.submit': 'Continue',
  'sign_up.have_account': 'Already have an account?',
  'sign_up.sign_in_link': 'Sign in',
  'sign_up.closed': 'New accounts cannot be created for {app} here. Ask its administrator for an invitation, or sign in.',
  'sign_in.no_account': 'No account yet?',
  'sign_in.sign_up_link': 'Create one',
  'organization.title': 'Choose an organization',
  'organization.body': 'Which organization do you want to continue with?',
  'organization.none': 'You do not belong to any organization.',
  'organization.back': 'Back to your account',
  'organization.unknown': 'You are not a member of that organization.',
  'organization.link': 'Switch organization',
  'footer.support': 'Need help?',
} as const;

export type MessageKey = keyof typeof en;

const fr: Record<MessageKey, string> = {
  'sign_in.title': 'Se connecter à {app}',
  'sign_in.email': 'Adresse e-mail',
  'sign_in.continue': 'Continuer',
  'sign_in.check_email.title': 'Consultez vos e-mails',
  'sign_in.check_email.body':
    'Nous avons envoyé un lien de connexion à {email}. Ouvrez-le sur cet appareil ou sur un autre : cette page continue toute seule.',
  'sign_in.check_email.refresh': 'Vérifier à nouveau',
  'sign_in.other_email': 'Utiliser une autre adresse',
  'magic_link.title': 'Poursuivre la connexion',
  'magic_link.body': 'Poursuivre la connexion à {app} ?',
  'magic_link.confirm': 'Oui, me connecter',
  'magic_link.elsewhere.title': 'Confirmé',
  'magic_link.elsewhere.body':
    'Revenez sur l’appareil où vous avez demandé le lien : la connexion s’y poursuit. Vous pouvez fermer cet onglet.',
  'mfa.title': 'Vérification en deux étapes',
  'mfa.totp': 'Code de votre application d’authentification',
  'mfa.backup_code': 'Code de secours',
  'mfa.verify': 'Vérifier',
  'mfa.use_backup_code': 'Utiliser un code de secours',
  'mfa.use_totp': 'Utiliser votre application d’authentification',
  'consent.title': 'Lire et accepter',
  'consent.body': 'Pour continuer, lisez et acceptez :',
  'consent.accept': 'Accepter et continuer',
  'passkeys.or': 'ou',
  'passkeys.sign_in': 'Se connecter avec une clé d’accès',
  'passkeys.mfa': 'Utiliser votre clé d’accès',
  'passkeys.failed': 'La clé d’accès n’a pas pu être utilisée. Réessayez, ou choisissez un autre moyen.',
  'passkeys.invalid': 'Cette clé d’accès n’a pas été acceptée. Réessayez, ou choisissez un autre moyen.',
  'passkeys.section': 'Clés d’accès',
  'passkeys.none': 'Vous n’avez pas encore de clé d’accès.',
  'passkeys.add': 'Ajouter une clé d’accès',
  'passkeys.remove': 'Supprimer',
  'passkeys.remove_label': 'Supprimer la clé d’accès {name}',
  'passkeys.created': 'Ajoutée le {date}',
  'passkeys.last_used': 'dernière utilisation le {date}',
  'passkeys.added': 'Clé d’accès ajoutée.',
  'passkeys.removed': 'Clé d’accès supprimée.',
  'passkeys.step_up': 'Pour supprimer une clé d’accès, reconnectez-vous avec une clé d’accès ou un second facteur.',
  'account.title': 'Votre compte',
  'account.signed_in_as': 'Connecté en tant que {email}',
  'sign_out.button': 'Se déconnecter',
  'sign_out.title': 'Déconnecté',
  'sign_out.body': 'Vous êtes déconnecté de {app}.',
  'sign_out.again': 'Se reconnecter',
  'error.title': 'Un problème est survenu',
  'error.request_id': 'Identifiant de la requête : {id}',
  'error.csrf': 'Ce formulaire a expiré. Rechargez la page et réessayez.',
  'error.not_found': 'Cette page n’existe pas.',
  'error.start_again': 'Recommencer',
  'error.link_invalid': 'Ce lien de connexion est invalide, a expiré ou a déjà servi. Demandez-en un nouveau.',
  'error.code_invalid': 'Ce code n’est pas le bon. Réessayez.',
  'error.rate_limited': 'Trop de tentatives. Patientez un instant et réessayez.',
  'error.access_denied': 'Vous ne pouvez pas vous connecter à {app} avec ce compte.',
  'error.email_invalid': 'Saisissez une adresse e-mail valide.',
  'error.generic': 'Cette étape n’a pas pu aboutir. Réessayez.',
  'authorize.title': '{client} veut utiliser votre compte {app}',
  'authorize.signed_in_as': 'Connecté en tant que {email}',
  'authorize.scopes': '{client} pourra :',
  'authorize.allow': 'Autoriser',
  'authorize.deny': 'Refuser',
  'select_account.title': 'Choisir un compte',
  'select_account.body': 'Quel compte voulez-vous utiliser avec {client} ?',
  'select_account.continue': 'Continuer en tant que {email}',
  'select_account.another': 'Utiliser un autre compte',
  'sign_in.step_up': '{client} vous demande de confirmer votre identité avec votre second facteur : reconnectez-vous.',
  'error.interaction_invalid':
    'Cette demande de connexion a expiré, a déjà servi ou a été commencée dans un autre navigateur. Revenez à l’application et réessayez.',
  'federated.social.group': 'Autres moyens de connexion',
  'federated.social.or': 'Ou continuer avec',
  'federated.social.continue_with': 'Continuer avec {provider}',
  'federated.failed': 'La connexion par ce moyen n’a pas abouti. Réessayez.',
  'federated.other_browser': 'Cette connexion a commencé dans un autre navigateur, ou elle a expiré. Recommencez ici.',
  'sign_up.title': 'Créer votre compte {app}',
  'sign_up.body':
    'Saisissez votre adresse e-mail : nous vous envoyons un lien, et votre compte est créé quand vous l’ouvrez. Si vous avez déjà un compte, le lien vous connecte.',
  'sign_up.name': 'Votre nom (facultatif)',
  'sign_up.submit': 'Continuer',
  'sign_up.have_account': 'Vous avez déjà un compte ?',
  'sign_up.sign_in_link': 'Se connecter',
  'sign_up.closed': 'Impossible de créer un compte {app} ici. Demandez une invitation à son administrateur, ou connectez-vous.',
  'sign_in.no_account': 'Pas encore de compte ?',
  'sign_in.sign_up_link': 'En créer un',
  'organization.title': 'Choisir une organisation',
  'organization.body': 'Avec quelle organisation voulez-vous continuer ?',
  'organization.none': 'Vous n’appartenez à aucune organisation.',
  'organization.back': 'Retour à votre compte',
  'organization.unknown': 'Vous n’êtes pas membre de cette organisation.',
  'organization.link': 'Changer d’organisation',
  'footer.support': 'Besoin d’aide ?',
};

const CATALOGS = { en, fr } satisfies Record<string, Record<MessageKey, string>>;
export type Locale = keyof typeof CATALOGS;
const isLocale = (tag: string): tag is Locale => tag in CATALOGS;

/**
 * The page's language: the first supported one of OpenID Connect's `ui_locales` (space-separated, in order of
 * preference), else of `Accept-Language` (by q-value), else English. Only the primary subtag decides (`fr-CA` → fr).
 */
export function negotiateLocale(uiLocales: string | undefined, acceptLanguage: string | undefined): Locale {
  for (const tag of (uiLocales ?? '').split(/\s+/)) {
    const primary = tag.split('-')[0]?.toLowerCase() ?? '';
    if (isLocale(primary)) return primary;
  }
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, index) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
      return { primary: tag.split('-')[0]?.toLowerCase() ?? '', q: q ? Number(q.slice(2)) : 1, index };
    })
    .filter((entry) => entry.q > 0 && Number.isFinite(entry.q))
    .sort((a, b) => b.q - a.q || a.index - b.index);
  const found = ranked.find((entry) => isLocale(entry.primary))?.primary;
  return found && isLocale(found) ? found : 'en';
}

export type Translate = (key: MessageKey, values?: Record<string, string>) => string;

/** The catalog of a language as a function: `t('sign_in.title', { app })`. */
export const translator =
  (locale: Locale): Translate =>
  (key, values = {}) =>
    CATALOGS[locale][key].replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
