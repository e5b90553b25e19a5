import { Migration } from '@mikro-orm/migrations';

export class Migration20261122053350_sign_in extends Migration {

  override name = 'Migration20261122053350_sign_in';

  override up(): void | Promise<void> {
    this.addSql(`create table "magic_links" ("id" uuid not null, "application_id" uuid not null, "email" varchar(320) not null, "email_normalized" varchar(320) not null, "token_hash" varchar(64) not null, "redirect_url" varchar(2048) null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "magic_links" add constraint "magic_links_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "magic_links_application_id_email_normalized_created_at_index" on "magic_links" ("application_id", "email_normalized", "created_at");`);

    this.addSql(`create table "messages" ("id" uuid not null, "application_id" uuid not null, "template_key" varchar(64) not null, "channel" varchar(16) not null, "to" varchar(320) not null, "subject" varchar(998) null, "body" text not null, "status" varchar(16) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "messages_application_id_created_at_id_index" on "messages" ("application_id", "created_at", "id");`);

    this.addSql(`create table "rate_limits" ("key" varchar(255) not null, "points" int not null default 0, "expire" bigint null, primary key ("key"));`);

    this.addSql(`create table "signing_keys" ("id" uuid not null, "application_id" uuid not null, "public_jwk" jsonb not null, "private_key_sealed" text not null, "status" varchar(16) not null, "created_at" timestamptz not null, "retired_at" timestamptz null, "publish_until" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "signing_keys_application_id_created_at_index" on "signing_keys" ("application_id", "created_at");`);
    this.addSql(`create unique index "signing_keys_one_active" on "signing_keys" ("application_id") where "status" = 'active';`);

    this.addSql(`create table "template_overrides" ("id" uuid not null, "application_id" uuid not null, "key" varchar(64) not null, "subject" varchar(998) null, "body" text null, "delivered" boolean null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "template_overrides" add constraint "template_overrides_application_key_unique" unique ("application_id", "key");`);

    this.addSql(`create table "sessions" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "aal" int not null, "organization_id" uuid null, "refresh_token_hash" varchar(64) not null, "mfa_enrollment_required" boolean not null default false, "user_agent" varchar(512) null, "ip" varchar(64) null, "created_at" timestamptz not null, "last_active_at" timestamptz not null, "expires_at" timestamptz not null, "revoked_at" timestamptz null, primary key ("id"));`);
    this.addSql(`alter table "sessions" add constraint "sessions_refresh_token_hash_unique" unique ("refresh_token_hash");`);
    this.addSql(`create index "sessions_user_id_created_at_index" on "sessions" ("user_id", "created_at");`);
    this.addSql(`create index "sessions_application_id_created_at_index" on "sessions" ("application_id", "created_at");`);

    this.addSql(`create table "refresh_tokens" ("token_hash" varchar(64) not null, "session_id" uuid not null, "created_at" timestamptz not null, primary key ("token_hash"));`);
    this.addSql(`create index "refresh_tokens_session_id_index" on "refresh_tokens" ("session_id");`);

    this.addSql(`create table "pending_tokens" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "token_hash" varchar(64) not null, "stage" varchar(16) not null, "aal" int not null, "first_factor" varchar(32) not null, "failed_attempts" int not null default 0, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "pending_tokens" add constraint "pending_tokens_token_hash_unique" unique ("token_hash");`);
    this.addSql(`create index "pending_tokens_user_id_index" on "pending_tokens" ("user_id");`);

    this.addSql(`create table "consents" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "doc_type" varchar(64) not null, "version" varchar(64) not null, "accepted_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "consents" add constraint "consents_user_doc_version_unique" unique ("user_id", "doc_type", "version");`);

    this.addSql(`alter table "magic_links" add constraint "magic_links_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "messages" add constraint "messages_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "signing_keys" add constraint "signing_keys_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "template_overrides" add constraint "template_overrides_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "sessions" add constraint "sessions_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "sessions" add constraint "sessions_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "sessions" add constraint "sessions_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete set null;`);

    this.addSql(`alter table "refresh_tokens" add constraint "refresh_tokens_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on delete cascade;`);

    this.addSql(`alter table "pending_tokens" add constraint "pending_tokens_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "pending_tokens" add constraint "pending_tokens_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);

    this.addSql(`alter table "consents" add constraint "consents_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "consents" add constraint "consents_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "refresh_tokens" drop constraint "refresh_tokens_session_id_foreign";`);

    this.addSql(`drop table if exists "magic_links" cascade;`);
    this.addSql(`drop table if exists "messages" cascade;`);
    this.addSql(`drop table if exists "rate_limits" cascade;`);
    this.addSql(`drop table if exists "signing_keys" cascade;`);
    this.addSql(`drop table if exists "template_overrides" cascade;`);
    this.addSql(`drop table if exists "sessions" cascade;`);
    this.addSql(`drop table if exists "refresh_tokens" cascade;`);
    this.addSql(`drop table if exists "pending_tokens" cascade;`);
    this.addSql(`drop table if exists "consents" cascade;`);
  }

}
