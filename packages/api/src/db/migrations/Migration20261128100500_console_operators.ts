import { Migration } from '@mikro-orm/migrations';

/**
 * The console: a reserved application (`applications.reserved`, unique, so concurrent starts create it once), its
 * operators (each a user of the console application) and their roles, per application or for every application
 * (`application_id` null). One role per operator and application: the unique index reads a missing application as the
 * nil UUID.
 */
export class Migration20261128100500_console_operators extends Migration {
  override name = 'Migration20261128100500_console_operators';

  override up(): void | Promise<void> {
    this.addSql(`alter table "applications" add column "reserved" varchar(32) null;`);
    this.addSql(`alter table "applications" add constraint "applications_reserved_unique" unique ("reserved");`);
    this.addSql(
      `create table "operators" ("id" uuid not null, "user_id" uuid not null, "created_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(`alter table "operators" add constraint "operators_user_id_unique" unique ("user_id");`);
    this.addSql(
      `alter table "operators" add constraint "operators_user_id_foreign" foreign key ("user_id") references "users" ("id") on delete cascade;`,
    );
    this.addSql(
      `create table "operator_roles" ("id" uuid not null, "operator_id" uuid not null, "application_id" uuid null, "role" varchar(16) not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`,
    );
    this.addSql(
      `create unique index "operator_roles_operator_application_unique" on "operator_roles" ("operator_id", coalesce("application_id", '00000000-0000-0000-0000-000000000000'::uuid));`,
    );
    this.addSql(`create index "operator_roles_application_id_index" on "operator_roles" ("application_id");`);
    this.addSql(
      `alter table "operator_roles" add constraint "operator_roles_operator_id_foreign" foreign key ("operator_id") references "operators" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "operator_roles" add constraint "operator_roles_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "operator_roles" cascade;`);
    this.addSql(`drop table if exists "operators" cascade;`);
    this.addSql(`alter table "applications" drop constraint if exists "applications_reserved_unique";`);
    this.addSql(`alter table "applications" drop column "reserved";`);
  }
}
