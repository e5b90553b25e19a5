import { Migration } from '@mikro-orm/migrations';

/**
 * Second-factor step-up: a pending token opened from a live session is bound to it (`session_id`); its second factor
 * raises that session to aal 2 instead of opening a new one. Null for the pending tokens of a sign-in.
 */
export class Migration20261128090000_step_up extends Migration {
  override name = 'Migration20261128090000_step_up';

  override up(): void | Promise<void> {
    this.addSql(`alter table "pending_tokens" add column "session_id" uuid null;`);
    this.addSql(
      `alter table "pending_tokens" add constraint "pending_tokens_session_id_foreign" foreign key ("session_id") references "sessions" ("id") on delete cascade;`,
    );
    this.addSql(`create index "pending_tokens_session_id_index" on "pending_tokens" ("session_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index if exists "pending_tokens_session_id_index";`);
    this.addSql(`alter table "pending_tokens" drop constraint if exists "pending_tokens_session_id_foreign";`);
    this.addSql(`alter table "pending_tokens" drop column "session_id";`);
  }
}
