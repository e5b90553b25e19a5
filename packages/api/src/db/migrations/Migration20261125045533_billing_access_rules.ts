import { Migration } from '@mikro-orm/migrations';

export class Migration20261125045533_billing_access_rules extends Migration {

  override name = 'Migration20261125045533_billing_access_rules';

  override up(): void | Promise<void> {
    this.addSql(`create table "access_rules" ("id" uuid not null, "application_id" uuid not null, "effect" varchar(8) not null, "subject_kind" varchar(16) not null, "subject_id" uuid not null, "target_kind" varchar(16) not null, "target_id" uuid not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "access_rules_application_id_created_at_id_index" on "access_rules" ("application_id", "created_at", "id");`);
    this.addSql(`create index "access_rules_application_id_target_id_target_kind_index" on "access_rules" ("application_id", "target_id", "target_kind");`);

    this.addSql(`create table "host_groups" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "host_groups_application_id_created_at_id_index" on "host_groups" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "host_groups" add constraint "host_groups_application_name_unique" unique ("application_id", "name");`);

    this.addSql(`create table "hosts" ("id" uuid not null, "application_id" uuid not null, "name" varchar(200) not null, "host_group_id" uuid null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "hosts_application_id_created_at_id_index" on "hosts" ("application_id", "created_at", "id");`);
    this.addSql(`create index "hosts_host_group_id_index" on "hosts" ("host_group_id");`);
    this.addSql(`alter table "hosts" add constraint "hosts_application_name_unique" unique ("application_id", "name");`);

    this.addSql(`create table "billing_plans" ("id" uuid not null, "application_id" uuid not null, "key" varchar(64) not null, "name" varchar(200) not null, "interval" varchar(8) not null, "currency" varchar(3) not null, "price_cents" int not null, "per_seat_cents" int not null, "trial_days" int not null default 0, "archived_at" timestamptz null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "billing_plans_application_id_created_at_id_index" on "billing_plans" ("application_id", "created_at", "id");`);
    this.addSql(`alter table "billing_plans" add constraint "billing_plans_application_key_unique" unique ("application_id", "key");`);

    this.addSql(`create table "billing_subscriptions" ("id" uuid not null, "application_id" uuid not null, "organization_id" uuid not null, "plan_id" uuid not null, "status" varchar(16) not null, "seats" int not null, "current_period_end" timestamptz not null, "canceled_at" timestamptz null, "cancel_at_period_end" boolean not null default false, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "billing_subscriptions_application_id_created_at_id_index" on "billing_subscriptions" ("application_id", "created_at", "id");`);
    this.addSql(`create index "billing_subscriptions_plan_id_index" on "billing_subscriptions" ("plan_id");`);
    this.addSql(`create unique index "billing_subscriptions_live_organization_unique" on "billing_subscriptions" ("organization_id") where "status" <> 'canceled';`);
    this.addSql(`create index "billing_subscriptions_due_index" on "billing_subscriptions" ("current_period_end") where "status" <> 'canceled';`);

    this.addSql(`alter table "magic_links" add "host_id" uuid null;`);

    this.addSql(`alter table "sessions" add "host_id" uuid null;`);

    this.addSql(`alter table "pending_tokens" add "host_id" uuid null;`);

    this.addSql(`alter table "access_rules" add constraint "access_rules_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "host_groups" add constraint "host_groups_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "hosts" add constraint "hosts_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "hosts" add constraint "hosts_host_group_id_foreign" foreign key ("host_group_id") references "host_groups" ("id") on delete set null;`);

    this.addSql(`alter table "billing_plans" add constraint "billing_plans_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "billing_subscriptions" add constraint "billing_subscriptions_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "billing_subscriptions" add constraint "billing_subscriptions_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`);
    this.addSql(`alter table "billing_subscriptions" add constraint "billing_subscriptions_plan_id_foreign" foreign key ("plan_id") references "billing_plans" ("id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "hosts" drop constraint "hosts_host_group_id_foreign";`);
    this.addSql(`alter table "billing_subscriptions" drop constraint "billing_subscriptions_plan_id_foreign";`);

    this.addSql(`drop table if exists "access_rules" cascade;`);
    this.addSql(`drop table if exists "host_groups" cascade;`);
    this.addSql(`drop table if exists "hosts" cascade;`);
    this.addSql(`drop table if exists "billing_plans" cascade;`);
    this.addSql(`drop table if exists "billing_subscriptions" cascade;`);

    this.addSql(`alter table "magic_links" drop column "host_id";`);

    this.addSql(`alter table "pending_tokens" drop column "host_id";`);

    this.addSql(`alter table "sessions" drop column "host_id";`);
  }

}
