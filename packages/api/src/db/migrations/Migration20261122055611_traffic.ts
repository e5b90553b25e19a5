import { Migration } from '@mikro-orm/migrations';

export class Migration20261122055611_traffic extends Migration {

  override name = 'Migration20261122055611_traffic';

  override up(): void | Promise<void> {
    this.addSql(`alter table "applications" add "first_traffic_at" timestamptz null;`);
    // Applications that already had traffic keep has_traffic true.
    this.addSql(`update "applications" a set "first_traffic_at" = now() where exists (select 1 from "users" u where u."application_id" = a."id") or exists (select 1 from "sessions" s where s."application_id" = a."id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "applications" drop column "first_traffic_at";`);
  }

}
