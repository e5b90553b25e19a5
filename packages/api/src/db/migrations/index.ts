import { Migration20261122050914_initial } from './Migration20261122050914_initial.ts';

/** Committed migrations, in order. `npm run migration:create -w @gatehouse/api -- <name>` writes the next one. */
export const migrationsList = [{ name: 'Migration20261122050914_initial', class: Migration20261122050914_initial }];
