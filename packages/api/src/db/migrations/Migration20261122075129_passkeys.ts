import { Migration } from '@mikro-orm/migrations';

export class Migration20261122075129_passkeys extends Migration {

  override name = 'Migration20261122075129_passkeys';

  override up(): void | Promise<void> {
    this.addSql(`create table "identities" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "kind" varchar(16) not null, "subject" text not null, "name" varchar(200) not null, "public_key" text null, "sign_count" bigint null, "user_handle" varchar(128) null, "transports" jsonb null, "aaguid" varchar(36) null, "backup_eligible" boolean null, "backed_up" boolean null, "created_at" timestamptz not null, "last_used_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "identities_user_id_kind_created_at_index" on "identities" ("user_id", "kind", "created_at");`);
    this.addSql(`alter table "identities" add constraint "identities_application_kind_subject_unique" unique ("application_id", "kind", "subject");`);

    this.addSql(`create table "webauthn_challenges" ("id" uuid not null, "application_id" uuid not null, "ceremony" varchar(16) not null, "state_hash" varchar(64) not null, "challenge" varchar(128) not null, "user_id" uuid null, "session_id" uuid null, "pending_token_id" uuid null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`alter table "webauthn_challenges" add constraint "webauthn_challenges_state_hash_unique" unique ("state_hash");`);

    this.addSql(`alter table "identities" add constraint "identities_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "identities" add constraint "identities_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);

    this.addSql(`alter table "webauthn_challenges" add constraint "webauthn_challenges_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "webauthn_challenges" add constraint "webauthn_challenges_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "webauthn_challenges" add constraint "webauthn_challenges_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on delete cascade;`);
    this.addSql(`alter table "webauthn_challenges" add constraint "webauthn_challenges_pending_token_id_foreign" foreign key ("pending_token_id") references "pending_tokens" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "identities" cascade;`);
    this.addSql(`drop table if exists "webauthn_challenges" cascade;`);
  }

}
