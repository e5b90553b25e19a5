import { Migration } from '@mikro-orm/migrations';

/** A SAML connection may belong to an organization (whose verified domains' SSO policy sends people to it). */
export class Migration20261128000500_saml_connection_organization extends Migration {
  override name = 'Migration20261128000500_saml_connection_organization';

  override up(): void | Promise<void> {
    this.addSql(`alter table "saml_connections" add column "organization_id" uuid null;`);
    this.addSql(
      `alter table "saml_connections" add constraint "saml_connections_organization_id_foreign" foreign key ("organization_id") references "organizations" ("id") on delete set null;`,
    );
    this.addSql(`create index "saml_connections_organization_id_index" on "saml_connections" ("organization_id");`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "saml_connections" drop column "organization_id";`);
  }
}
