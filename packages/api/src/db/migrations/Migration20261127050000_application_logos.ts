import { Migration } from '@mikro-orm/migrations';

/** Each application's uploaded logo (at most one): the bytes served at `/a/{application_id}/logo`. */
export class Migration20261127050000_application_logos extends Migration {

  override name = 'Migration20261127050000_application_logos';

  override up(): void | Promise<void> {
    this.addSql(`create table "application_logos" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "updated_at" timestamptz not null, "content_type" varchar(32) not null, "data" bytea not null, "sha256" varchar(64) not null, primary key ("id"));`);
    this.addSql(`alter table "application_logos" add constraint "application_logos_application_unique" unique ("application_id");`);

    this.addSql(`alter table "application_logos" add constraint "application_logos_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "application_logos" cascade;`);
  }

}
