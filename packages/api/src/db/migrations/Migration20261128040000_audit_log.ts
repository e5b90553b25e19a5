import { Migration } from '@mikro-orm/migrations';

/**
 * Events become audit log entries: who acted and from where, the organization and the target, written with each event
 * (earlier events: the system acted, the organization and target read from their data), and an index for each of the
 * audit log's filters, newest first.
 */
export class Migration20261128040000_audit_log extends Migration {
  override name = 'Migration20261128040000_audit_log';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "events" add column "actor_type" varchar(16) not null default 'system', add column "actor_id" varchar(255) not null default 'gatehouse', add column "ip" varchar(64) null, add column "user_agent" varchar(512) null, add column "organization_id" uuid null, add column "target_type" varchar(64) null, add column "target_id" varchar(255) null;`,
    );
    this.addSql(`alter table "events" alter column "actor_type" drop default, alter column "actor_id" drop default;`);
    this.addSql(
      `update "events" set
         "organization_id" = case
           when "type" like 'organization.%' then ("data"->>'id')::uuid
           when "data"->>'organization_id' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then ("data"->>'organization_id')::uuid
         end,
         "target_type" = case
           when "type" like 'organization_membership.%' then 'user'
           when jsonb_typeof("data"->'id') = 'string' then regexp_replace("type", '\\.[^.]*$', '')
         end,
         "target_id" = case when "type" like 'organization_membership.%' then "data"->>'user_id' else "data"->>'id' end;`,
    );
    this.addSql(`drop index "events_application_id_type_index";`);
    this.addSql(
      `create index "events_application_id_type_created_at_id_index" on "events" ("application_id", "type", "created_at", "id");`,
    );
    this.addSql(
      `create index "events_application_id_organization_id_created_at_id_index" on "events" ("application_id", "organization_id", "created_at", "id");`,
    );
    this.addSql(
      `create index "events_application_id_actor_id_created_at_id_index" on "events" ("application_id", "actor_id", "created_at", "id");`,
    );
    this.addSql(
      `create index "events_application_id_target_id_created_at_id_index" on "events" ("application_id", "target_id", "created_at", "id");`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "events_application_id_type_created_at_id_index";`);
    this.addSql(`drop index "events_application_id_organization_id_created_at_id_index";`);
    this.addSql(`drop index "events_application_id_actor_id_created_at_id_index";`);
    this.addSql(`drop index "events_application_id_target_id_created_at_id_index";`);
    this.addSql(`create index "events_application_id_type_index" on "events" ("application_id", "type");`);
    this.addSql(
      `alter table "events" drop column "actor_type", drop column "actor_id", drop column "ip", drop column "user_agent", drop column "organization_id", drop column "target_type", drop column "target_id";`,
    );
  }
}
