import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045349_oauth2 extends Migration {

  override name = 'Migration20261125045349_oauth2';

  override up(): void | Promise<void> {
    this.addSql(`create table "oauth2_clients" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "type" varchar(16) not null, "redirect_uris" jsonb not null, "scopes" jsonb not null, "logo_url" varchar(2048) null, "secret_hash" varchar(64) null, "dynamic" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "oauth2_clients_application_id_created_at_id_index" on "oauth2_clients" ("application_id", "created_at", "id");`);

    this.addSql(`create table "oauth2_grants" ("id" varchar(64) not null, "application_id" uuid not null, "user_id" uuid not null, "client_id" uuid not null, "scopes" jsonb not null, "payload" jsonb not null, "expires_at" timestamptz not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "oauth2_grants_user_id_client_id_index" on "oauth2_grants" ("user_id", "client_id");`);
    this.addSql(`create index "oauth2_grants_application_id_created_at_id_index" on "oauth2_grants" ("application_id", "created_at", "id");`);

    this.addSql(`create table "oauth2_artifacts" ("id" varchar(128) not null, "kind" varchar(40) not null, "application_id" uuid not null, "grant_id" varchar(64) null, "uid" varchar(128) null, "account_id" varchar(64) null, "client_id" varchar(64) null, "payload" jsonb not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "oauth2_artifacts_grant_id_index" on "oauth2_artifacts" ("grant_id");`);
    this.addSql(`create index "oauth2_artifacts_uid_index" on "oauth2_artifacts" ("uid");`);
    this.addSql(`create index "oauth2_artifacts_expires_at_index" on "oauth2_artifacts" ("expires_at");`);

    this.addSql(`alter table "oauth2_clients" add constraint "oauth2_clients_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "oauth2_grants" add constraint "oauth2_grants_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "oauth2_grants" add constraint "oauth2_grants_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "oauth2_grants" add constraint "oauth2_grants_client_id_foreign" foreign key ("client_id") references "oauth2_clients" ("id") on delete cascade;`);

    this.addSql(`alter table "oauth2_artifacts" add constraint "oauth2_artifacts_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "oauth2_artifacts" add constraint "oauth2_artifacts_grant_id_foreign" foreign key ("grant_id") references "oauth2_grants" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "oauth2_grants" drop constraint "oauth2_grants_client_id_foreign";`);
    this.addSql(`alter table "oauth2_artifacts" drop constraint "oauth2_artifacts_grant_id_foreign";`);

    this.addSql(`drop table if exists "oauth2_clients" cascade;`);
    this.addSql(`drop table if exists "oauth2_grants" cascade;`);
    this.addSql(`drop table if exists "oauth2_artifacts" cascade;`);
  }

}
