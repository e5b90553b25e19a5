import { Migration } from '@mikro-orm/migrations';

/**
 * The daily statistics: `stats_days`, the finished days housekeeping rolls up (one row per application and UTC day);
 * and for the days counted live, ranges of three indexes read without the tables: sessions by application and creation
 * (the index that was there, now carrying the user and the methods), sessions by application and last activity, and
 * webhook deliveries by application and creation (carrying the status). The events' `(application_id, type,
 * created_at, id)` serves their counts already.
 */
export class Migration20261128110000_stats_daily extends Migration {
  override name = 'Migration20261128110000_stats_daily';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "stats_days" ("application_id" uuid not null, "day" date not null, "sign_ins_magic_link" int not null, "sign_ins_passkey" int not null, "sign_ins_federated" int not null, "sign_ins_other" int not null, "active_users" int not null, "new_users" int not null, "failed_sign_ins" int not null, "webhooks_succeeded" int not null, "webhooks_failed" int not null, "webhooks_pending" int not null, "computed_at" timestamptz not null, primary key ("application_id", "day"));`,
    );
    this.addSql(
      `alter table "stats_days" add constraint "stats_days_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`,
    );
    this.addSql(`drop index "sessions_application_id_created_at_index";`);
    this.addSql(
      `create index "sessions_application_id_created_at_index" on "sessions" ("application_id", "created_at") include ("user_id", "amr");`,
    );
    this.addSql(
      `create index "sessions_application_id_last_active_at_index" on "sessions" ("application_id", "last_active_at") include ("user_id");`,
    );
    this.addSql(
      `create index "webhook_deliveries_application_id_created_at_index" on "webhook_deliveries" ("application_id", "created_at") include ("status");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "stats_days" cascade;`);
    this.addSql(`drop index "webhook_deliveries_application_id_created_at_index";`);
    this.addSql(`drop index "sessions_application_id_last_active_at_index";`);
    this.addSql(`drop index "sessions_application_id_created_at_index";`);
    this.addSql(`create index "sessions_application_id_created_at_index" on "sessions" ("application_id", "created_at");`);
  }
}
