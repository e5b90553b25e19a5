import { Migration } from '@mikro-orm/migrations';

/** A grant remembers the organization active when the user signed in for it (the `organization` scope's claims). */
export class Migration20261127070000_oauth2_grant_organization extends Migration {
  override name = 'Migration20261127070000_oauth2_grant_organization';

  override up(): void | Promise<void> {
    this.addSql(`alter table "oauth2_grants" add column "organization_id" uuid null;`);
    this.addSql(
      `alter table "oauth2_grants" add constraint "oauth2_grants_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete set null;`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "oauth2_grants" drop column "organization_id";`);
  }
}
