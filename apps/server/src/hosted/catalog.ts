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
  'account.back': 'Back to your account',
  'account.profile.title': 'Profile',
  'account.profile.email': 'Email address',
  'account.profile.no_email': 'No email address',
  'account.profile.name': 'Name',
  'account.profile.save': 'Save',
  'account.sessions.title': 'Where you are signed in',
  'account.sessions.current': 'This browser',
  'account.sessions.unknown_device': 'Unknown device',
  'account.sessions.details': 'Signed in {created} · last active {active}',
  'account.sessions.revoke': 'Sign out this session',
  'account.totp.title': 'Authenticator app',
  'account.totp.none': 'Not set up. With one, signing in also asks for a code from your phone.',
  'account.totp.enabled': 'Set up on {date}.',
  'account.totp.add': 'Set up an authenticator app',
  'account.totp.replace': 'Replace it with another app',
  'account.totp.remove': 'Remove the authenticator app',
  'account.totp.enrol.title': 'Set up an authenticator app',
  'account.totp.enrol.required': '{app} requires two-step verification. Set up an authenticator app to continue.',
  'account.totp.enrol.start_body':
    'You will scan a QR code with an authenticator app on your phone, then type the code it shows.',
  'account.totp.enrol.start': 'Show the QR code',
  'account.totp.enrol.scan': 'Scan this QR code with your authenticator app, or type the setup key into it.',
  'account.totp.enrol.qr': 'QR code that adds {app} to an authenticator app',
  'account.totp.enrol.secret': 'Setup key',
  'account.totp.enrol.confirm': 'Confirm',
  'account.backup_codes.title': 'Backup codes',
  'account.backup_codes.none': 'One-time codes for when you cannot use your authenticator app.',
  'account.backup_codes.has': 'You have a set made on {date}. A new set voids it.',
  'account.backup_codes.generate': 'Generate backup codes',
  'account.backup_codes.regenerate': 'Generate a new set',
  'account.backup_codes.shown.title': 'Your backup codes',
  'account.backup_codes.shown.body': 'Save these codes somewhere safe now: they are shown only this once, and each works once.',
  'account.identities.title': 'Linked accounts',
  'account.identities.none': 'No linked accounts.',
  'account.identities.unlink': 'Unlink {name}',
  'account.grants.title': 'Apps you authorized',
  'account.grants.none': 'No apps.',
  'account.grants.scopes': 'Access: {scopes}',
  'account.grants.revoke': 'Revoke access of {name}',
  'account.step_up.body': 'Some changes need a check of your second factor first.',
  'account.step_up.button': 'Verify with your second factor',
  'account.done.profile_saved': 'Your profile is saved.',
  'account.done.session_revoked': 'That session is signed out.',
  'account.done.totp_added': 'Your authenticator app is set up.',
  'account.done.totp_removed': 'The authenticator app is removed.',
  'account.done.identity_unlinked': 'The account is unlinked.',
  'account.done.grant_revoked': 'The app no longer has access.',
  'account.failed.step_up_required':
    'This change needs a check of your second factor. Verify with it (we email you a sign-in link), then try again.',
  'account.failed.not_found': 'That item does not exist any more.',
  'account.failed.invalid': 'Check what you entered and try again.',
  'account.failed.code_invalid': 'That code is not right. Try again.',
  'account.failed.last_identity': 'This is the only way left to sign in to your account: add another one first.',
  'account.failed.enrol_first': 'Set up two-step verification first.',
  'account.failed.no_email': 'Sign out, then sign in again with your second factor.',
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
  'account.back': 'Retour à votre compte',
  'account.profile.title': 'Profil',
  'account.profile.email': 'Adresse e-mail',
  'account.profile.no_email': 'Aucune adresse e-mail',
  'account.profile.name': 'Nom',
  'account.profile.save': 'Enregistrer',
  'account.sessions.title': 'Où vous êtes connecté',
  'account.sessions.current': 'Ce navigateur',
  'account.sessions.unknown_device': 'Appareil inconnu',
  'account.sessions.details': 'Connexion le {created} · dernière activité le {active}',
  'account.sessions.revoke': 'Déconnecter cette session',
  'account.totp.title': 'Application d’authentification',
  'account.totp.none': 'Non configurée. Avec elle, la connexion demande aussi un code affiché sur votre téléphone.',
  'account.totp.enabled': 'Configurée le {date}.',
  'account.totp.add': 'Configurer une application d’authentification',
  'account.totp.replace': 'La remplacer par une autre application',
  'account.totp.remove': 'Supprimer l’application d’authentification',
  'account.totp.enrol.title': 'Configurer une application d’authentification',
  'account.totp.enrol.required':
    '{app} exige la vérification en deux étapes. Configurez une application d’authentification pour continuer.',
  'account.totp.enrol.start_body':
    'Vous allez scanner un QR code avec une application d’authentification sur votre téléphone, puis saisir le code qu’elle affiche.',
  'account.totp.enrol.start': 'Afficher le QR code',
  'account.totp.enrol.scan':
    'Scannez ce QR code avec votre application d’authentification, ou saisissez-y la clé de configuration.',
  'account.totp.enrol.qr': 'QR code qui ajoute {app} à une application d’authentification',
  'account.totp.enrol.secret': 'Clé de configuration',
  'account.totp.enrol.confirm': 'Confirmer',
  'account.backup_codes.title': 'Codes de secours',
  'account.backup_codes.none':
    'Des codes à usage unique pour quand vous ne pouvez pas utiliser votre application d’authentification.',
  'account.backup_codes.has': 'Vous avez une série créée le {date}. Une nouvelle série l’annule.',
  'account.backup_codes.generate': 'Générer des codes de secours',
  'account.backup_codes.regenerate': 'Générer une nouvelle série',
  'account.backup_codes.shown.title': 'Vos codes de secours',
  'account.backup_codes.shown.body':
    'Conservez ces codes en lieu sûr dès maintenant : ils ne sont affichés qu’une fois, et chacun ne sert qu’une fois.',
  'account.identities.title': 'Comptes associés',
  'account.identities.none': 'Aucun compte associé.',
  'account.identities.unlink': 'Dissocier {name}',
  'account.grants.title': 'Applications autorisées',
  'account.grants.none': 'Aucune application.',
  'account.grants.scopes': 'Accès : {scopes}',
  'account.grants.revoke': 'Retirer l’accès de {name}',
  'account.step_up.body': 'Certaines modifications demandent d’abord une vérification de votre second facteur.',
  'account.step_up.button': 'Vérifier avec votre second facteur',
  'account.done.profile_saved': 'Votre profil est enregistré.',
  'account.done.session_revoked': 'Cette session est déconnectée.',
  'account.done.totp_added': 'Votre application d’authentification est configurée.',
  'account.done.totp_removed': 'L’application d’authentification est supprimée.',
  'account.done.identity_unlinked': 'Le compte est dissocié.',
  'account.done.grant_revoked': 'L’application n’a plus accès.',
  'account.failed.step_up_required':
    'Cette modification demande une vérification de votre second facteur. Vérifiez avec lui (nous vous envoyons un lien de connexion), puis réessayez.',
  'account.failed.not_found': 'Cet élément n’existe plus.',
  'account.failed.invalid': 'Vérifiez votre saisie et réessayez.',
  'account.failed.code_invalid': 'Ce code n’est pas le bon. Réessayez.',
  'account.failed.last_identity': 'C’est le dernier moyen de vous connecter à votre compte : ajoutez-en un autre d’abord.',
  'account.failed.enrol_first': 'Configurez d’abord la vérification en deux étapes.',
  'account.failed.no_email': 'Déconnectez-vous, puis reconnectez-vous avec votre second facteur.',
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
  'footer.support': 'Besoin d’aide ?',
};

const CATALOGS = { en, fr } satisfies Record<string, Record<MessageKey, string>>;
export type Locale = keyof typeof CATALOGS;
/** Whether `key` is one of the catalog's (a key read back from a cookie). */
export const isMessageKey = (key: unknown): key is MessageKey => typeof key === 'string' && Object.hasOwn(en, key);
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
