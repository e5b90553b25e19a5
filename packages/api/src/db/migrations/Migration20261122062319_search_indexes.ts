import { Migration } from '@mikro-orm/migrations';

export class Migration20261122062319_search_indexes extends Migration {

  override name = 'Migration20261122062319_search_indexes';

  override up(): void | Promise<void> {
    // pg_trgm is a trusted extension (PostgreSQL 13+): the database owner may create it.
    this.addSql(`create extension if not exists pg_trgm;`);
    this.addSql(`create index "organizations_name_trgm" on "organizations" using gin ("name" gin_trgm_ops);`);
    this.addSql(`create index "organizations_slug_trgm" on "organizations" using gin ("slug" gin_trgm_ops);`);

    this.addSql(`create index "users_email_trgm" on "users" using gin ("email_normalized" gin_trgm_ops);`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "organizations_name_trgm";`);
    this.addSql(`drop index "organizations_slug_trgm";`);

    this.addSql(`drop index "users_email_trgm";`);
  }

}
