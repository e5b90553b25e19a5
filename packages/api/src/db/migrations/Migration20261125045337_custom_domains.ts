import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045337_custom_domains extends Migration {

  override name = 'Migration20261125045337_custom_domains';

  override up(): void | Promise<void> {
    this.addSql(`create table "custom_domains" ("id" uuid not null, "application_id" uuid not null, "domain" varchar(253) not null, "status" varchar(32) not null, "tls_status" varchar(16) not null, "verification_token" varchar(128) not null, "verified_at" timestamptz null, "verification_error" varchar(32) null, "last_checked_at" timestamptz null, "check_count" int not null default 0, "next_check_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "custom_domains" add constraint "custom_domains_domain_unique" unique ("domain");`);
    this.addSql(`create index "custom_domains_application_id_created_at_id_index" on "custom_domains" ("application_id", "created_at", "id");`);
    this.addSql(`create index "custom_domains_pending_next_check_index" on "custom_domains" ("next_check_at") where "status" = 'pending_verification';`);

    this.addSql(`alter table "custom_domains" add constraint "custom_domains_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "custom_domains" cascade;`);
  }

}
