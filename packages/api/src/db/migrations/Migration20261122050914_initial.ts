import { Migration } from '@mikro-orm/migrations';

export class Migration20261122050914_initial extends Migration {

  override name = 'Migration20261122050914_initial';

  override up(): void | Promise<void> {
    this.addSql(`create table "applications" ("id" uuid not null, "name" varchar(200) not null, "environment" varchar(16) not null, "allowed_origins" jsonb not null, "settings" jsonb not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "applications_created_at_id_index" on "applications" ("created_at", "id");`);

    this.addSql(`create table "api_keys" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "scopes" jsonb not null, "prefix" varchar(16) not null, "secret_hash" varchar(64) not null, "created_at" timestamptz not null, "last_used_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_secret_hash_unique" unique ("secret_hash");`);
    this.addSql(`create index "api_keys_application_id_created_at_index" on "api_keys" ("application_id", "created_at");`);

    this.addSql(`create table "events" ("id" uuid not null, "application_id" uuid not null, "type" varchar(64) not null, "data" jsonb not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "events_application_id_created_at_id_index" on "events" ("application_id", "created_at", "id");`);
    this.addSql(`create index "events_application_id_type_index" on "events" ("application_id", "type");`);

    this.addSql(`create table "organizations" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "slug" varchar(100) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "organizations_application_id_created_at_id_index" on "organizations" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "organizations" add constraint "organizations_application_slug_unique" unique ("application_id", "slug");`);

    this.addSql(`create table "users" ("id" uuid not null, "application_id" uuid not null, "primary_email" varchar(320) null, "email_normalized" varchar(320) null, "email_verified" boolean not null default false, "status" varchar(16) not null default 'active', "profile" jsonb not null, "merged_into" uuid null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "users_application_id_created_at_id_index" on "users" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "users" add constraint "users_application_email_unique" unique ("application_id", "email_normalized");`);

    this.addSql(`create table "organization_members" ("id" uuid not null, "application_id" uuid not null, "organization_id" uuid not null, "user_id" uuid not null, "role" varchar(64) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "organization_members_organization_id_created_at_id_index" on "organization_members" ("organization_id", "created_at", "id");`);
    this.addSql(`create index "organization_members_user_id_index" on "organization_members" ("user_id");`);
    this.addSql(`alter table "organization_members" add constraint "organization_members_org_user_unique" unique ("organization_id", "user_id");`);

    this.addSql(`alter table "api_keys" add constraint "api_keys_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "events" add constraint "events_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "organizations" add constraint "organizations_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "users" add constraint "users_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "organization_members" add constraint "organization_members_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "organization_members" add constraint "organization_members_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
    this.addSql(`alter table "organization_members" add constraint "organization_members_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "api_keys" drop constraint "api_keys_application_id_foreign";`);
    this.addSql(`alter table "events" drop constraint "events_application_id_foreign";`);
    this.addSql(`alter table "organizations" drop constraint "organizations_application_id_foreign";`);
    this.addSql(`alter table "users" drop constraint "users_application_id_foreign";`);
    this.addSql(`alter table "organization_members" drop constraint "organization_members_application_id_foreign";`);
    this.addSql(`alter table "organization_members" drop constraint "organization_members_organization_id_foreign";`);
    this.addSql(`alter table "organization_members" drop constraint "organization_members_user_id_foreign";`);

    this.addSql(`drop table if exists "applications" cascade;`);
    this.addSql(`drop table if exists "api_keys" cascade;`);
    this.addSql(`drop table if exists "events" cascade;`);
    this.addSql(`drop table if exists "organizations" cascade;`);
    this.addSql(`drop table if exists "users" cascade;`);
    this.addSql(`drop table if exists "organization_members" cascade;`);
  }

}
