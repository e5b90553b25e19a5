import { Migration } from '@mikro-orm/migrations';

/** The hosted pages' browser sessions: a session may be named by one browser token (SHA-256). */
export class Migration20261127040000_browser_sessions extends Migration {
  override name = 'Migration20261127040000_browser_sessions';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sessions" add column "browser_token_hash" varchar(64) null;`);
    this.addSql(`alter table "sessions" add constraint "sessions_browser_token_hash_unique" unique ("browser_token_hash");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sessions" drop column "browser_token_hash";`);
  }
}
