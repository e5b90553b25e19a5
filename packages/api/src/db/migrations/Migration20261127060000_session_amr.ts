import { Migration } from '@mikro-orm/migrations';

/**
 * The authentication methods of each session (RFC 8176 `amr`, carried into the OpenID provider's tokens; null for
 * sessions opened before), and the logout redirect URIs an OAuth client registers (RP-initiated logout).
 */
export class Migration20261127060000_session_amr extends Migration {
  override name = 'Migration20261127060000_session_amr';

  override up(): void | Promise<void> {
    this.addSql(`alter table "sessions" add column "amr" jsonb null;`);
    this.addSql(`alter table "oauth2_clients" add column "post_logout_redirect_uris" jsonb null;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "sessions" drop column "amr";`);
    this.addSql(`alter table "oauth2_clients" drop column "post_logout_redirect_uris";`);
  }
}
