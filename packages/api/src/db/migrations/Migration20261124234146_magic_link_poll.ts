import { Migration } from '@mikro-orm/migrations';

export class Migration20261124234146_magic_link_poll extends Migration {

  override name = 'Migration20261124234146_magic_link_poll';

  override up(): void | Promise<void> {
    this.addSql(`alter table "magic_links" add "poll_secret_hash" varchar(64) null, add "confirmed_at" timestamptz null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "magic_links" drop column "poll_secret_hash", drop column "confirmed_at";`);
  }

}
