import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045309_authz extends Migration {

  override name = 'Migration20261125045309_authz';

  override up(): void | Promise<void> {
    this.addSql(`create table "authz_tuples" ("id" uuid not null, "application_id" uuid not null, "object_type" varchar(64) not null, "object_id" varchar(256) not null, "relation" varchar(64) not null, "subject_type" varchar(64) not null, "subject_id" varchar(256) not null, "subject_relation" varchar(64) not null default '', "revision" bigint not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "authz_tuples_subject_index" on "authz_tuples" ("application_id", "subject_type", "subject_id", "subject_relation", "created_at", "id");`);
    this.addSql(`create index "authz_tuples_application_id_created_at_id_index" on "authz_tuples" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "authz_tuples" add constraint "authz_tuples_unique" unique ("application_id", "object_type", "object_id", "relation", "subject_type", "subject_id", "subject_relation");`);

    // The consistency tokens: one value per tuple batch (not an entity's column, so written by hand).
    this.addSql(`create sequence "authz_revisions";`);

    this.addSql(`alter table "authz_tuples" add constraint "authz_tuples_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "authz_tuples" cascade;`);
    this.addSql(`drop sequence if exists "authz_revisions";`);
  }

}
