import { Migration } from '@mikro-orm/migrations';

export class Migration20261122063034_mfa extends Migration {

  override name = 'Migration20261122063034_mfa';

  override up(): void | Promise<void> {
    this.addSql(`create table "mfa_factors" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "kind" varchar(16) not null, "name" varchar(200) not null, "secret_sealed" text null, "last_used_step" int null, "confirmed_at" timestamptz null, "created_at" timestamptz not null, "last_used_at" timestamptz null, primary key ("id"));`);
    this.addSql(`create index "mfa_factors_user_id_created_at_index" on "mfa_factors" ("user_id", "created_at");`);
    this.addSql(`create unique index "mfa_factors_one_confirmed_per_kind" on "mfa_factors" ("user_id", "kind") where "confirmed_at" is not null;`);

    this.addSql(`create table "mfa_backup_codes" ("id" uuid not null, "application_id" uuid not null, "user_id" uuid not null, "factor_id" uuid not null, "code_hash" varchar(64) not null, "used_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "mfa_backup_codes_user_id_index" on "mfa_backup_codes" ("user_id");`);
    this.addSql(`alter table "mfa_backup_codes" add constraint "mfa_backup_codes_factor_code_unique" unique ("factor_id", "code_hash");`);

    this.addSql(`alter table "mfa_factors" add constraint "mfa_factors_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "mfa_factors" add constraint "mfa_factors_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);

    this.addSql(`alter table "mfa_backup_codes" add constraint "mfa_backup_codes_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "mfa_backup_codes" add constraint "mfa_backup_codes_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`);
    this.addSql(`alter table "mfa_backup_codes" add constraint "mfa_backup_codes_factor_id_foreign" foreign key ("factor_id") references "mfa_factors" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "mfa_backup_codes" drop constraint "mfa_backup_codes_factor_id_foreign";`);

    this.addSql(`drop table if exists "mfa_factors" cascade;`);
    this.addSql(`drop table if exists "mfa_backup_codes" cascade;`);
  }

}
