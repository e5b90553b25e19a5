import { Migration } from '@mikro-orm/migrations';

/**
 * A refresh rotates the session row in place. The unique index on `sessions.refresh_token_hash` goes: a presented
 * token is found by its row in `refresh_tokens` (its primary key; every issued token has one), then the session by
 * its id. With activity written at most every 30 seconds, a rotation then changes no indexed column, and PostgreSQL
 * can update the row within its page (a HOT update) instead of adding an entry to each of the table's indexes: the
 * pages keep a tenth free for it.
 */
export class Migration20261128120000_sessions_refresh_in_place extends Migration {
  override name = 'Migration20261128120000_sessions_refresh_in_place';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sessions" drop constraint "sessions_refresh_token_hash_unique";`);
    this.addSql(`alter table "sessions" set (fillfactor = 90);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sessions" reset (fillfactor);`);
    this.addSql(
      `alter table "sessions" add constraint "sessions_refresh_token_hash_unique" unique ("refresh_token_hash");`,
    );
  }
}
