import { Migration } from '@mikro-orm/migrations';

/** A SAML code remembers where the ACS sent it: `sso/complete` may require the same `redirect_uri` (a bound hop). */
export class Migration20261127061500_saml_code_redirect extends Migration {
  override name = 'Migration20261127061500_saml_code_redirect';

  override up(): void | Promise<void> {
    this.addSql(`alter table "saml_codes" add column "redirect_uri" varchar(2048) null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "saml_codes" drop column "redirect_uri";`);
  }
}
