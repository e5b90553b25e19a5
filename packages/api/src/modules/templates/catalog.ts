/** The messages the service sends. Each application may override subject, body and `delivered` per key. */
export interface CatalogEntry {
  key: string;
  label: string;
  description: string;
  channel: 'email' | 'sms';
  has_subject: boolean;
  delivered: boolean;
  variables: Array<{ name: string; description: string; example: string }>;
  subject: string;
  /** HTML, in Mustache syntax: `{{variable}}` is escaped, `{{{variable}}}` is raw. */
  body: string;
}

const common = [
  { name: 'app_name', description: 'The application name', example: 'Acme' },
  { name: 'email', description: "The recipient's email address", example: 'ada@example.com' },
];

const layout = (content: string) =>
  `<div style="font-family: system-ui, sans-serif; max-width: 480px; margin: 0 auto; line-height: 1.5">${content}</div>`;

const notice = (key: string, label: string, description: string, subject: string, sentence: string): CatalogEntry => ({
  key,
  label,
  description,
  channel: 'email',
  has_subject: true,
  delivered: true,
  variables: [
    ...common,
    { name: 'name', description: 'The name of the passkey or factor', example: 'MacBook Touch ID' },
    { name: 'occurred_at', description: 'When it happened (ISO 8601, UTC)', example: '2026-11-22T05:14:30Z' },
  ],
  subject,
  body: layout(
    `<p>${sentence}</p><p>If this was not you, sign in and review your security settings, or contact {{app_name}} support.</p>`,
  ),
});

export const CATALOG: CatalogEntry[] = [
  {
    key: 'magic_link',
    label: 'Magic link',
    description: 'Sent when someone asks to sign in with their email address.',
    channel: 'email',
    has_subject: true,
    delivered: true,
    variables: [
      ...common,
      { name: 'link', description: 'The single-use sign-in link', example: 'https://app.example.com/sign-in?token=ml_…' },
      { name: 'expires_in_minutes', description: 'Minutes until the link expires', example: '10' },
    ],
    subject: 'Your sign-in link for {{app_name}}',
    body: layout(
      '<p>Hello,</p><p>Use this link to sign in to {{app_name}}. It works once and expires in {{expires_in_minutes}} minutes.</p>' +
        '<p><a href="{{link}}">Sign in to {{app_name}}</a></p>' +
        '<p>If you did not ask for it, ignore this email: nobody can sign in without the link.</p>',
    ),
  },
  {
    key: 'organization_invitation',
    label: 'Organization invitation',
    description: 'Sent when someone is invited to an organization (and again when the invitation is resent).',
    channel: 'email',
    has_subject: true,
    delivered: true,
    variables: [
      ...common,
      { name: 'organization_name', description: 'The name of the organization', example: 'Acme Inc.' },
      {
        name: 'link',
        description: 'The invitation link (single use; opening it accepts nothing)',
        example: 'https://auth.example.com/a/…/invitations/inv_…',
      },
      { name: 'expires_at', description: 'When the link expires (ISO 8601, UTC)', example: '2026-12-05T05:14:30.000Z' },
    ],
    subject: 'You are invited to join {{organization_name}} on {{app_name}}',
    body: layout(
      '<p>Hello,</p><p>You are invited to join <strong>{{organization_name}}</strong> on {{app_name}}.</p>' +
        '<p><a href="{{link}}">Accept the invitation</a></p>' +
        '<p>The link works once and expires at {{expires_at}}. If you did not expect it, ignore this email.</p>',
    ),
  },
  notice(
    'passkey_added',
    'Passkey added',
    'Sent when a passkey is registered.',
    'A passkey was added to your {{app_name}} account',
    'A passkey named “{{name}}” was added to your {{app_name}} account at {{occurred_at}}.',
  ),
  notice(
    'passkey_removed',
    'Passkey removed',
    'Sent when a passkey is removed.',
    'A passkey was removed from your {{app_name}} account',
    'The passkey named “{{name}}” was removed from your {{app_name}} account at {{occurred_at}}.',
  ),
  notice(
    'mfa_factor_added',
    'Second factor added',
    'Sent when a TOTP app or backup codes are set up.',
    'Two-step verification changed on your {{app_name}} account',
    'A second factor ({{name}}) was added to your {{app_name}} account at {{occurred_at}}.',
  ),
  notice(
    'mfa_factor_removed',
    'Second factor removed',
    'Sent when a TOTP app or backup codes are removed.',
    'Two-step verification changed on your {{app_name}} account',
    'A second factor ({{name}}) was removed from your {{app_name}} account at {{occurred_at}}.',
  ),
];

export const catalogEntry = (key: string): CatalogEntry | undefined => CATALOG.find((t) => t.key === key);
