import { Migration } from '@mikro-orm/migrations';

/**
 * The admin portal: its links (one use, 5 minutes) and the sessions they open (1 hour), both stored as SHA-256; and
 * the SAML connection test (a request's and a code's `purpose`, the test's attributes).
 */
export class Migration20261128050000_admin_portal extends Migration {
  override name = 'Migration20261128050000_admin_portal';

  override up(): void | Promise<void> {
    this.addSql(
      `create table "portal_links" ("id" uuid not null, "application_id" uuid not null, "created_at" timestamptz not null, "organization_id" uuid not null, "intent" varchar(16) not null, "token_hash" varchar(64) not null, "return_url" varchar(2048) null, "expires_at" timestamptz not null, "consumed_at" timestamptz null, "session_hash" varchar(64) null, "session_expires_at" timestamptz null, primary key ("id"));`,
    );
    this.addSql(`alter table "portal_links" add constraint "portal_links_token_hash_unique" unique ("token_hash");`);
    this.addSql(`alter table "portal_links" add constraint "portal_links_session_hash_unique" unique ("session_hash");`);
    this.addSql(`create index "portal_links_organization_id_index" on "portal_links" ("organization_id");`);
    this.addSql(`create index "portal_links_expires_at_index" on "portal_links" ("expires_at");`);
    this.addSql(
      `alter table "portal_links" add constraint "portal_links_application_id_foreign" foreign key ("application_id") references "applications" ("id") on delete cascade;`,
    );
    this.addSql(
      `alter table "portal_links" add constraint "portal_links_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete cascade;`,
    );
    this.addSql(`alter table "saml_requests" add column "purpose" varchar(16) not null default 'sign_in';`);
    this.addSql(
      `alter table "saml_codes" add column "purpose" varchar(16) not null default 'sign_in', add column "attributes" jsonb null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`drop table if exists "portal_links" cascade;`);
    this.addSql(`alter table "saml_requests" drop column "purpose";`);
    this.addSql(`alter table "saml_codes" drop column "purpose", drop column "attributes";`);
  }
}
