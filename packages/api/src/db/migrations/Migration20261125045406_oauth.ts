import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045406_oauth extends Migration {

  override name = 'Migration20261125045406_oauth';

  override up(): void | Promise<void> {
    this.addSql(`create table "oauth_providers" ("id" uuid not null, "application_id" uuid not null, "provider" varchar(32) not null, "client_id" varchar(512) null, "client_secret_sealed" text null, "issuer" varchar(2048) null, "enabled" boolean not null, "scopes" jsonb not null, "use_shared_dev_credentials" boolean not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "oauth_providers" add constraint "oauth_providers_application_provider_unique" unique ("application_id", "provider");`);

    this.addSql(`create table "oauth_states" ("id" uuid not null, "application_id" uuid not null, "provider" varchar(32) not null, "state_hash" varchar(64) not null, "purpose" varchar(16) not null, "user_id" uuid null, "secrets_sealed" text not null, "redirect_uri" varchar(2048) not null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "oauth_states" add constraint "oauth_states_state_hash_unique" unique ("state_hash");`);
    this.addSql(`create index "oauth_states_expires_at_index" on "oauth_states" ("expires_at");`);

    this.addSql(`create table "oauth_provider_tokens" ("id" uuid not null, "identity_id" uuid not null, "application_id" uuid not null, "tokens_sealed" text not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "oauth_provider_tokens" add constraint "oauth_provider_tokens_identity_id_unique" unique ("identity_id");`);

    this.addSql(`alter table "oauth_providers" add constraint "oauth_providers_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "oauth_states" add constraint "oauth_states_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "oauth_states" add constraint "oauth_states_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);

    this.addSql(`alter table "oauth_provider_tokens" add constraint "oauth_provider_tokens_identity_id_foreign" foreign key ("identity_id") references "identities" ("id") on delete cascade;`);
    this.addSql(`alter table "oauth_provider_tokens" add constraint "oauth_provider_tokens_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "oauth_providers" cascade;`);
    this.addSql(`drop table if exists "oauth_states" cascade;`);
    this.addSql(`drop table if exists "oauth_provider_tokens" cascade;`);
  }

}
