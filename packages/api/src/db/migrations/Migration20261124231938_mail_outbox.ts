import { Migration } from '@mikro-orm/migrations';

export class Migration20261124231938_mail_outbox extends Migration {

  override name = 'Migration20261124231938_mail_outbox';

  override up(): void | Promise<void> {
    this.addSql(`alter table "messages" add "payload_sealed" text null, add "attempts" int not null default 0, add "next_attempt_at" timestamptz null, add "locked_until" timestamptz null, add "last_error" varchar(64) null, add "sent_at" timestamptz null;`);
    // The outbox worker's claim reads only due, queued rows.
    this.addSql(`create index "messages_queued_next_attempt_index" on "messages" ("next_attempt_at") where "status" = 'queued';`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "messages_queued_next_attempt_index";`);
    this.addSql(`alter table "messages" drop column "payload_sealed", drop column "attempts", drop column "next_attempt_at", drop column "locked_until", drop column "last_error", drop column "sent_at";`);
  }

}
