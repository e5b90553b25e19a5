import { Migration } from '@mikro-orm/migrations';

export class Migration20261125015317_saml extends Migration {

  override name = 'Migration20261125015317_saml';

  override up(): void | Promise<void> {
    this.addSql(`create table "saml_connections" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "enabled" boolean not null, "idp_entity_id" varchar(1024) not null, "idp_sso_url" varchar(2048) not null, "idp_certificate" text null, "certificate_expires_at" timestamptz null, "email_attribute" varchar(256) null, "email_domain" varchar(253) null, "name_attribute" varchar(256) null, "allow_idp_initiated" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "saml_connections_application_id_created_at_id_index" on "saml_connections" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "saml_connections" add constraint "saml_connections_application_email_domain_unique" unique ("application_id", "email_domain");`);

    this.addSql(`create table "saml_codes" ("id" uuid not null, "application_id" uuid not null, "connection_id" uuid not null, "code_hash" varchar(64) not null, "name_id" varchar(1024) not null, "email" varchar(320) null, "display_name" varchar(200) null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "saml_codes" add constraint "saml_codes_code_hash_unique" unique ("code_hash");`);

    this.addSql(`create table "saml_assertions" ("id" uuid not null, "connection_id" uuid not null, "assertion_id" varchar(256) not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "saml_assertions_expires_at_index" on "saml_assertions" ("expires_at");`);
    this.addSql(`alter table "saml_assertions" add constraint "saml_assertions_connection_assertion_unique" unique ("connection_id", "assertion_id");`);

    this.addSql(`create table "saml_requests" ("id" varchar(64) not null, "application_id" uuid not null, "connection_id" uuid not null, "redirect_uri" varchar(2048) not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);

    this.addSql(`alter table "saml_connections" add constraint "saml_connections_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "saml_codes" add constraint "saml_codes_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "saml_codes" add constraint "saml_codes_connection_id_foreign" foreign key ("connection_id") references "saml_connections" ("id") on delete cascade;`);

    this.addSql(`alter table "saml_assertions" add constraint "saml_assertions_connection_id_foreign" foreign key ("connection_id") references "saml_connections" ("id") on delete cascade;`);

    this.addSql(`alter table "saml_requests" add constraint "saml_requests_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "saml_requests" add constraint "saml_requests_connection_id_foreign" foreign key ("connection_id") references "saml_connections" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "saml_codes" drop constraint "saml_codes_connection_id_foreign";`);
    this.addSql(`alter table "saml_assertions" drop constraint "saml_assertions_connection_id_foreign";`);
    this.addSql(`alter table "saml_requests" drop constraint "saml_requests_connection_id_foreign";`);

    this.addSql(`drop table if exists "saml_connections" cascade;`);
    this.addSql(`drop table if exists "saml_codes" cascade;`);
    this.addSql(`drop table if exists "saml_assertions" cascade;`);
    this.addSql(`drop table if exists "saml_requests" cascade;`);
  }

}
