import { Migration } from '@mikro-orm/migrations';

export class Migration20261124235032_idempotency_keys extends Migration {

  override name = 'Migration20261124235032_idempotency_keys';

  override up(): void | Promise<void> {
    this.addSql(`create table "idempotency_keys" ("id" uuid not null, "scope" varchar(64) not null, "key" varchar(255) not null, "fingerprint" varchar(64) not null, "response" text null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "idempotency_keys_created_at_index" on "idempotency_keys" ("created_at");`);
    this.addSql(`alter table "idempotency_keys" add constraint "idempotency_keys_scope_key_unique" unique ("scope", "key");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "idempotency_keys" cascade;`);
  }

}
