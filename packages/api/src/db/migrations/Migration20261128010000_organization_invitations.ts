import { Migration } from '@mikro-orm/migrations';

/** Invitations to organizations: the token as SHA-256, the status derived from the timestamps. */
export class Migration20261128010000_organization_invitations extends Migration {
  override name = 'Migration20261128010000_organization_invitations';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "organization_invitations" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "organization_id" uuid not null, "email" varchar(320) not null, "role" varchar(64) not null, "token_hash" varchar(64) not null, "redirect_url" varchar(2048) null, "lifetime_s" int not null, "expires_at" timestamptz not null, "accepted_at" timestamptz null, "revoked_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(
      `alter table "organization_invitations" add constraint "organization_invitations_token_hash_unique" unique ("token_hash");`,
    );
    this.addSql(
      `create index "organization_invitations_organization_id_created_at_id_index" on "organization_invitations" ("organization_id", "created_at", "id");`,
    );
    this.addSql(
      `create index "organization_invitations_application_id_email_index" on "organization_invitations" ("application_id", "email");`,
    );
    this.addSql(
      `alter table "organization_invitations" add constraint "organization_invitations_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "organization_invitations" add constraint "organization_invitations_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "organization_invitations" cascade;`);
  }
}
