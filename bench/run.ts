/**
 * `npm run bench [-- <suite>…]`: the load benchmark of the real server against minimal servers, one file per suite in
 * bench/suites/. Writes bench/RESULTS.md (a run of some suites keeps the others' sections). Never part of `npm test`.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cleanUp, commandLine, log, ROOT } from './harness/env.ts';
import { takeWarnings } from './harness/processes.ts';
import { type Clock, loadAverage, renderResults, renderSection, type SuiteResult } from './harness/report.ts';
import { authzSuite } from './suites/authz.ts';
import { betterAuthSuite } from './suites/better-auth.ts';
import { bootSuite } from './suites/boot.ts';
import { consoleSuite } from './suites/console.ts';
import { dashboardSuite } from './suites/dashboard.ts';
import { hostedSuite } from './suites/hosted.ts';
import { mfaSuite } from './suites/mfa.ts';
import { oauthSuite } from './suites/oauth.ts';
import { oauth2Suite } from './suites/oauth2.ts';
import { organizationsSuite } from './suites/organizations.ts';
import { poolerSuite } from './suites/pooler.ts';
import { samlSuite } from './suites/saml.ts';
import { scimSuite } from './suites/scim.ts';
import { sdkSuite } from './suites/sdk.ts';
import { signInSuite } from './suites/sign-in.ts';
import { webhooksSuite } from './suites/webhooks.ts';

const SUITES: Record<string, () => Promise<SuiteResult>> = {
  organizations: organizationsSuite,
  'sign-in': signInSuite,
  mfa: mfaSuite,
  sdk: sdkSuite,
  saml: samlSuite,
  authz: authzSuite,
  oauth: oauthSuite,
  webhooks: webhooksSuite,
  oauth2: oauth2Suite,
  hosted: hostedSuite,
  pooler: poolerSuite,
  boot: bootSuite,
  scim: scimSuite,
  'better-auth': betterAuthSuite,
  dashboard: dashboardSuite,
  console: consoleSuite,
};
const names = Object.keys(SUITES);
const requested = process.argv.slice(2);
for (const name of requested)
  if (!names.includes(name)) throw new Error(`unknown suite ${name}: the suites are ${names.join(', ')}`);

// An error thrown outside the suite's await chain (inside a load generator's callback, say, which may throw again on
// every later request) still removes the servers and scratch databases, once.
let failing = false;
for (const event of ['uncaughtException', 'unhandledRejection'] as const) {
  process.on(event, (error) => {
    if (failing) return;
    failing = true;
    console.error(`\nBENCHMARK FAILED: ${(error as Error)?.stack ?? error}`);
    void cleanUp().finally(() => process.exit(1));
  });
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up…`);
    void cleanUp().finally(() => process.exit(130));
  });
}

const path = join(ROOT, 'bench/RESULTS.md');
const sections: Record<string, string> = {};
try {
  for (const name of names.filter((n) => requested.length === 0 || requested.includes(n))) {
    const started = performance.now();
    const loadBefore = loadAverage();
    log(`suite ${name} (load average ${loadBefore.join(' / ')})`);
    const result = await SUITES[name]!();
    await cleanUp();
    const clock: Clock = {
      command: commandLine(requested),
      seconds: (performance.now() - started) / 1000,
      loadBefore,
      loadAfter: loadAverage(),
      warnings: takeWarnings(),
    };
    sections[name] = renderSection(name, result, clock);
    for (const t of result.targets)
      log(`target: ${t.name.replaceAll('`', '')}: ${t.gatehouse} vs ${t.baseline} (${t.required}) ${t.pass ? 'PASS' : 'FAIL'}`);
  }
  await writeFile(path, renderResults(names, sections, await readFile(path, 'utf8').catch(() => '')));
  log('wrote bench/RESULTS.md');
} catch (error) {
  console.error(`\nBENCHMARK FAILED: ${(error as Error).stack ?? error}`);
  await cleanUp();
  process.exit(1);
}
