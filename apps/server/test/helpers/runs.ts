import { inject } from 'vitest';
import { hasChromium } from './browser.ts';

/**
 * CI runs the server's suite three times (.ci/run): on the embedded database (the README's `npm test`), on PostgreSQL
 * (`DATABASE_URL`), and on PostgreSQL behind PgBouncer in transaction mode. Some tests prove the same thing in each.
 */

/**
 * The run on the embedded database, the default `npm test`. A test whose subject does not depend on the database under
 * test — it brings a PostgreSQL of its own (an outage, three processes behind HAProxy), or it is about the published
 * packages — runs here only.
 */
export const embeddedRun = !inject('databaseUrl');

/**
 * Whether this run drives Chromium: where it is installed, except in the run through PgBouncer, which repeats the suite
 * for the database's sake: what the browser tests add (the pages in a real browser) the other two runs prove already.
 */
export const browserRun = hasChromium && !inject('poolerUrl');
