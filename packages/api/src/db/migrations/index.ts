import { Migration20261122050914_initial } from './Migration20261122050914_initial.ts';
import { Migration20261122053350_sign_in } from './Migration20261122053350_sign_in.ts';
import { Migration20261122055611_traffic } from './Migration20261122055611_traffic.ts';
import { Migration20261122062319_search_indexes } from './Migration20261122062319_search_indexes.ts';
import { Migration20261122063034_mfa } from './Migration20261122063034_mfa.ts';
import { Migration20261122075129_passkeys } from './Migration20261122075129_passkeys.ts';
import { Migration20261124231938_mail_outbox } from './Migration20261124231938_mail_outbox.ts';
import { Migration20261124234146_magic_link_poll } from './Migration20261124234146_magic_link_poll.ts';
import { Migration20261124235032_idempotency_keys } from './Migration20261124235032_idempotency_keys.ts';
import { Migration20261125015317_saml } from './Migration20261125015317_saml.ts';
import { Migration20261125030758_webhooks } from './Migration20261125030758_webhooks.ts';
import { Migration20261125045309_authz } from './Migration20261125045309_authz.ts';
import { Migration20261125045337_custom_domains } from './Migration20261125045337_custom_domains.ts';
import { Migration20261125045349_oauth2 } from './Migration20261125045349_oauth2.ts';
import { Migration20261125045406_oauth } from './Migration20261125045406_oauth.ts';
import { Migration20261125045533_billing_access_rules } from './Migration20261125045533_billing_access_rules.ts';
import { Migration20261125060000_sign_in_hosts } from './Migration20261125060000_sign_in_hosts.ts';
import { Migration20261125100000_oauth2_uid_partial } from './Migration20261125100000_oauth2_uid_partial.ts';
import { Migration20261127040000_browser_sessions } from './Migration20261127040000_browser_sessions.ts';
import { Migration20261127050000_application_logos } from './Migration20261127050000_application_logos.ts';
import { Migration20261127060000_session_amr } from './Migration20261127060000_session_amr.ts';
import { Migration20261127061500_saml_code_redirect } from './Migration20261127061500_saml_code_redirect.ts';
import { Migration20261127070000_oauth2_grant_organization } from './Migration20261127070000_oauth2_grant_organization.ts';
import { Migration20261128000000_member_status_source } from './Migration20261128000000_member_status_source.ts';
import { Migration20261128000500_saml_connection_organization } from './Migration20261128000500_saml_connection_organization.ts';
import { Migration20261128010000_organization_invitations } from './Migration20261128010000_organization_invitations.ts';
import { Migration20261128020000_organization_domains } from './Migration20261128020000_organization_domains.ts';
import { Migration20261128030000_directories } from './Migration20261128030000_directories.ts';
import { Migration20261128040000_audit_log } from './Migration20261128040000_audit_log.ts';
import { Migration20261128050000_admin_portal } from './Migration20261128050000_admin_portal.ts';
import { Migration20261128090000_step_up } from './Migration20261128090000_step_up.ts';
import { Migration20261128094500_authz_check_function } from './Migration20261128094500_authz_check_function.ts';
import { Migration20261128100500_console_operators } from './Migration20261128100500_console_operators.ts';
import { Migration20261128110000_stats_daily } from './Migration20261128110000_stats_daily.ts';
import { Migration20261128120000_sessions_refresh_in_place } from './Migration20261128120000_sessions_refresh_in_place.ts';

/** Committed migrations, in order. `npm run migration:create -w @gatehouse/api -- <name>` writes the next one. */
export const migrationsList = [
  { name: 'Migration20261122050914_initial', class: Migration20261122050914_initial },
  { name: 'Migration20261122053350_sign_in', class: Migration20261122053350_sign_in },
  { name: 'Migration20261122055611_traffic', class: Migration20261122055611_traffic },
  { name: 'Migration20261122062319_search_indexes', class: Migration20261122062319_search_indexes },
  { name: 'Migration20261122063034_mfa', class: Migration20261122063034_mfa },
  { name: 'Migration20261122075129_passkeys', class: Migration20261122075129_passkeys },
  { name: 'Migration20261124231938_mail_outbox', class: Migration20261124231938_mail_outbox },
  { name: 'Migration20261124234146_magic_link_poll', class: Migration20261124234146_magic_link_poll },
  { name: 'Migration20261124235032_idempotency_keys', class: Migration20261124235032_idempotency_keys },
  { name: 'Migration20261125015317_saml', class: Migration20261125015317_saml },
  { name: 'Migration20261125030758_webhooks', class: Migration20261125030758_webhooks },
  { name: 'Migration20261125045309_authz', class: Migration20261125045309_authz },
  { name: 'Migration20261125045337_custom_domains', class: Migration20261125045337_custom_domains },
  { name: 'Migration20261125045349_oauth2', class: Migration20261125045349_oauth2 },
  { name: 'Migration20261125045406_oauth', class: Migration20261125045406_oauth },
  { name: 'Migration20261125045533_billing_access_rules', class: Migration20261125045533_billing_access_rules },
  { name: 'Migration20261125060000_sign_in_hosts', class: Migration20261125060000_sign_in_hosts },
  { name: 'Migration20261125100000_oauth2_uid_partial', class: Migration20261125100000_oauth2_uid_partial },
  { name: 'Migration20261127040000_browser_sessions', class: Migration20261127040000_browser_sessions },
  { name: 'Migration20261127050000_application_logos', class: Migration20261127050000_application_logos },
  { name: 'Migration20261127060000_session_amr', class: Migration20261127060000_session_amr },
  { name: 'Migration20261127061500_saml_code_redirect', class: Migration20261127061500_saml_code_redirect },
  { name: 'Migration20261127070000_oauth2_grant_organization', class: Migration20261127070000_oauth2_grant_organization },
  { name: 'Migration20261128000000_member_status_source', class: Migration20261128000000_member_status_source },
  { name: 'Migration20261128000500_saml_connection_organization', class: Migration20261128000500_saml_connection_organization },
  { name: 'Migration20261128010000_organization_invitations', class: Migration20261128010000_organization_invitations },
  { name: 'Migration20261128020000_organization_domains', class: Migration20261128020000_organization_domains },
  { name: 'Migration20261128030000_directories', class: Migration20261128030000_directories },
  { name: 'Migration20261128040000_audit_log', class: Migration20261128040000_audit_log },
  { name: 'Migration20261128050000_admin_portal', class: Migration20261128050000_admin_portal },
  { name: 'Migration20261128090000_step_up', class: Migration20261128090000_step_up },
  { name: 'Migration20261128094500_authz_check_function', class: Migration20261128094500_authz_check_function },
  { name: 'Migration20261128100500_console_operators', class: Migration20261128100500_console_operators },
  { name: 'Migration20261128110000_stats_daily', class: Migration20261128110000_stats_daily },
  {
    name: 'Migration20261128120000_sessions_refresh_in_place',
    class: Migration20261128120000_sessions_refresh_in_place,
  },
];
