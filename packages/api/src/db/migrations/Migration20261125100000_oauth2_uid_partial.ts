import { Migration } from '@mikro-orm/migrations';

/** Only sessions and interactions have a `uid`: the codes and tokens a refresh writes no longer add null entries. */
export class Migration20261125100000_oauth2_uid_partial extends Migration {
  override name = 'Migration20261125100000_oauth2_uid_partial';

  override up(): void | Promise<void> {
    this.addSql(`drop index "oauth2_artifacts_uid_index";`);
    this.addSql(`create index "oauth2_artifacts_uid_index" on "oauth2_artifacts" ("uid") where "uid" is not null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`drop index "oauth2_artifacts_uid_index";`);
    this.addSql(`create index "oauth2_artifacts_uid_index" on "oauth2_artifacts" ("uid");`);
  }
}
