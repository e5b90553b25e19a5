import { Migration } from '@mikro-orm/migrations';

export class Migration20261125030758_webhooks extends Migration {

  override name = 'Migration20261125030758_webhooks';

  override up(): void | Promise<void> {
    this.addSql(`create table "webhook_endpoints" ("id" uuid not null, "application_id" uuid not null, "url" varchar(2048) not null, "description" varchar(1024) not null default '', "event_types" jsonb not null, "status" varchar(16) not null default 'active', "disabled_reason" varchar(32) null, "secret_sealed" text not null, "previous_secret_sealed" text null, "previous_secret_expires_at" timestamptz null, "failing_since" timestamptz null, "created_at" timestamptz not null, "updated_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_endpoints_application_id_created_at_id_index" on "webhook_endpoints" ("application_id", "created_at", "id");`);

    this.addSql(`create table "webhook_deliveries" ("id" uuid not null, "application_id" uuid not null, "endpoint_id" uuid not null, "event_id" uuid not null, "event_type" varchar(64) not null, "status" varchar(16) not null, "attempts" int not null default 0, "response_status" int null, "last_attempt_at" timestamptz null, "next_attempt_at" timestamptz null, "locked_until" timestamptz null, "last_error" varchar(64) null, "created_at" timestamptz not null, primary key ("id"));`);
    this.addSql(`create index "webhook_deliveries_endpoint_id_created_at_id_index" on "webhook_deliveries" ("endpoint_id", "created_at", "id");`);
    this.addSql(`create index "webhook_deliveries_pending_next_attempt_index" on "webhook_deliveries" ("next_attempt_at") where "status" = 'pending';`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_endpoint_id_unique" unique ("event_id", "endpoint_id");`);

    this.addSql(`create table "webhook_attempts" ("id" uuid not null, "delivery_id" uuid not null, "attempted_at" timestamptz not null, "response_status" int null, "duration_ms" int not null, "response_excerpt" text null, "error" varchar(64) null, primary key ("id"));`);
    this.addSql(`create index "webhook_attempts_delivery_id_attempted_at_index" on "webhook_attempts" ("delivery_id", "attempted_at");`);

    this.addSql(`create or replace function "events_events_webhook_fan_out_fn"() returns trigger as \$\$ begin insert into "webhook_deliveries" ("id", "application_id", "endpoint_id", "event_id", "event_type", "status", "attempts", "next_attempt_at", "created_at") select encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3) from 1 for 6), 52, 1), 53, 1), 'hex')::uuid, new."application_id", e."id", new."id", new."type", 'pending', 0, new."created_at", new."created_at" from "webhook_endpoints" e where e."application_id" = new."application_id" and e."status" = 'active' and new."type" <> 'webhook.test' and (jsonb_array_length(e."event_types") = 0 or e."event_types" @> jsonb_build_array(new."type")); return null; end; \$\$ language plpgsql;`);
    this.addSql(`create trigger "events_webhook_fan_out" AFTER INSERT on "events" for each ROW execute function "events_events_webhook_fan_out_fn"();`);

    this.addSql(`alter table "webhook_endpoints" add constraint "webhook_endpoints_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoints" ("id") on delete cascade;`);
    this.addSql(`alter table "webhook_deliveries" add constraint "webhook_deliveries_event_id_foreign" foreign key ("event_id") references "events" ("id") on delete cascade;`);

    this.addSql(`alter table "webhook_attempts" add constraint "webhook_attempts_delivery_id_foreign" foreign key ("delivery_id") references "webhook_deliveries" ("id") on delete cascade;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_endpoint_id_foreign";`);
    this.addSql(`alter table "webhook_attempts" drop constraint "webhook_attempts_delivery_id_foreign";`);

    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);
    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
    this.addSql(`drop table if exists "webhook_attempts" cascade;`);

    this.addSql(`drop trigger if exists "events_webhook_fan_out" on "events";`);
    this.addSql(`drop function if exists "events_events_webhook_fan_out_fn"();`);
  }

}
