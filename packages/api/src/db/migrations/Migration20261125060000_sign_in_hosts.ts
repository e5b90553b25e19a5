import { Migration } from '@mikro-orm/migrations';

/** Every first factor's start may name the host the person signs in to (host access rules): passkeys, OAuth, SSO. */
export class Migration20261125060000_sign_in_hosts extends Migration {
  override name = 'Migration20261125060000_sign_in_hosts';

  override up(): void | Promise<void> {
    this.addSql(`alter table "webauthn_challenges" add "host_id" uuid null;`);
    this.addSql(`alter table "oauth_states" add "host_id" uuid null;`);
    this.addSql(`alter table "saml_requests" add "host_id" uuid null;`);
    this.addSql(`alter table "saml_codes" add "host_id" uuid null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webauthn_challenges" drop column "host_id";`);
    this.addSql(`alter table "oauth_states" drop column "host_id";`);
    this.addSql(`alter table "saml_requests" drop column "host_id";`);
    this.addSql(`alter table "saml_codes" drop column "host_id";`);
  }
}
