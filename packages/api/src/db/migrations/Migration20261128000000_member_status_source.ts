import { Migration } from '@mikro-orm/migrations';

/** A membership's `status` (a directory suspends it) and `source` (manual, invitation, domain, directory). */
export class Migration20261128000000_member_status_source extends Migration {
  override name = 'Migration20261128000000_member_status_source';

  override up(): void | Promise<void> {
    this.addSql(
      `alter table "organization_members" add column "status" varchar(16) not null default 'active', add column "source" varchar(16) not null default 'manual';`,
    );
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "organization_members" drop column "status", drop column "source";`);
  }
}
