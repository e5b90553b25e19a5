import { Migration } from '@mikro-orm/migrations';

/** Organization domains (CONTRACT §8): claimed, verified by DNS, at most one verified claim per domain per application. */
export class Migration20261128020000_organization_domains extends Migration {
  override name = 'Migration20261128020000_organization_domains';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "organization_domains" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "organization_id" uuid not null, "domain" varchar(253) not null, "status" varchar(32) not null, "verification_token" varchar(128) not null, "join_policy" varchar(16) not null default 'invite_only', "sso_policy" varchar(16) not null default 'optional', "verified_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "organization_domains" add constraint "organization_domains_organization_domain_unique" unique ("organization_id", "domain");`,
    );
    this.addSql(
      `create index "organization_domains_organization_id_created_at_id_index" on "organization_domains" ("organization_id", "created_at", "id");`,
    );
    this.addSql(
      `create unique index "organization_domains_verified_unique" on "organization_domains" ("application_id", "domain") where "status" = 'verified';`,
    );
    this.addSql(
      `alter table "organization_domains" add constraint "organization_domains_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "organization_domains" add constraint "organization_domains_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "organization_domains" cascade;`);
  }
}
