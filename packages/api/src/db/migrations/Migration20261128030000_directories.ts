import { Migration } from '@mikro-orm/migrations';

/** SCIM directories (CONTRACT §8): directories, their users, groups and group members. */
export class Migration20261128030000_directories extends Migration {

  override name = 'Migration20261128030000_directories';

  override up(): void | Promise<void> {
    this.addSql(`create table "directories" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "organization_id" uuid not null, "name" varchar(200) not null, "provider" varchar(16) not null, "status" varchar(16) not null, "token_hash" varchar(64) not null, "group_role_mappings" jsonb not null, "last_request_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "directories_organization_id_created_at_id_index" on "directories" ("organization_id", "created_at", "id");`);
    this.addSql(`create index "directories_application_id_created_at_id_index" on "directories" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "directories" add constraint "directories_token_hash_unique" unique ("token_hash");`);

    this.addSql(`create table "directory_groups" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "directory_id" uuid not null, "display_name" varchar(320) not null, "external_id" varchar(320) null, primary key ("id"));`);
    this.addSql(`create index "directory_groups_directory_id_created_at_id_index" on "directory_groups" ("directory_id", "created_at", "id");`);
    this.addSql(`create index "directory_groups_directory_id_display_name_index" on "directory_groups" ("directory_id", "display_name");`);

    this.addSql(`create table "directory_users" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "directory_id" uuid not null, "user_id" uuid not null, "user_name" varchar(320) not null, "user_name_normalized" varchar(320) not null, "external_id" varchar(320) null, "active" boolean not null, "resource" jsonb not null, primary key ("id"));`);
    this.addSql(`create index "directory_users_directory_id_created_at_id_index" on "directory_users" ("directory_id", "created_at", "id");`);
    this.addSql(`create index "directory_users_directory_id_external_id_index" on "directory_users" ("directory_id", "external_id");`);
    this.addSql(`create index "directory_users_user_id_index" on "directory_users" ("user_id");`);
    this.addSql(`alter table "directory_users" add constraint "directory_users_directory_user_name_unique" unique ("directory_id", "user_name_normalized");`);
    this.addSql(`alter table "directory_users" add constraint "directory_users_directory_user_unique" unique ("directory_id", "user_id");`);

    this.addSql(`create table "directory_group_members" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "directory_id" uuid not null, "group_id" uuid not null, "directory_user_id" uuid not null, primary key ("id"));`);
    this.addSql(`create index "directory_group_members_directory_user_id_index" on "directory_group_members" ("directory_user_id");`);
    this.addSql(`alter table "directory_group_members" add constraint "directory_group_members_group_user_unique" unique ("group_id", "directory_user_id");`);

    this.addSql(`alter table "directories" add constraint "directories_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "directories" add constraint "directories_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);

    this.addSql(`alter table "directory_groups" add constraint "directory_groups_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_groups" add constraint "directory_groups_directory_id_foreign" foreign key ("directory_id") references "directories" ("id") on delete cascade;`);

    this.addSql(`alter table "directory_users" add constraint "directory_users_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_users" add constraint "directory_users_directory_id_foreign" foreign key ("directory_id") references "directories" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_users" add constraint "directory_users_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);

    this.addSql(`alter table "directory_group_members" add constraint "directory_group_members_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_group_members" add constraint "directory_group_members_directory_id_foreign" foreign key ("directory_id") references "directories" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_group_members" add constraint "directory_group_members_group_id_foreign" foreign key ("group_id") references "directory_groups" ("id") on delete cascade;`);
    this.addSql(`alter table "directory_group_members" add constraint "directory_group_members_directory_user_id_foreign" foreign key ("directory_user_id") references "directory_users" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "directory_groups" drop constraint "directory_groups_directory_id_foreign";`);
    this.addSql(`alter table "directory_users" drop constraint "directory_users_directory_id_foreign";`);
    this.addSql(`alter table "directory_group_members" drop constraint "directory_group_members_directory_id_foreign";`);
    this.addSql(`alter table "directory_group_members" drop constraint "directory_group_members_group_id_foreign";`);
    this.addSql(`alter table "directory_group_members" drop constraint "directory_group_members_directory_user_id_foreign";`);

    this.addSql(`drop table if exists "directories" cascade;`);
    this.addSql(`drop table if exists "directory_groups" cascade;`);
    this.addSql(`drop table if exists "directory_users" cascade;`);
    this.addSql(`drop table if exists "directory_group_members" cascade;`);
  }

}
