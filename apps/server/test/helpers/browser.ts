import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { type BrowserContext, type CDPSession, chromium, type Page } from 'playwright-core';
import { WAIT_MS } from './limits.ts';

/** Debian's Chromium, which CI installs (`.ci/run`); a browser test skips itself, saying so, where it is missing. */
export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/**
 * The SDK's browser client as an app ships it: `@gatehouse/sdk/client` bundled for the browser by esbuild (the global
 * `Gatehouse`).
 */
export async function sdkBundle(): Promise<Uint8Array> {
  const { outputFiles } = await build({
    stdin: { contents: "export { createGatehouseClient } from '@gatehouse/sdk/client';", resolveDir: import.meta.dirname },
    bundle: true,
    write: false,
    format: 'iife',
    globalName: 'Gatehouse',
    platform: 'browser',
    target: 'chrome120',
    logLevel: 'silent',
  });
  return outputFiles[0]!.contents;
}

export interface Browser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Headless Chromium off the network (no background fetches, QUIC or component updates: this machine's network is
 * closed), in a throwaway profile; `hostRules` maps test host names (`MAP gatehouse.test:80 127.0.0.1:1234, …`).
 */
export async function launchChromium(hostRules: string): Promise<Browser> {
  const userDataDir = await mkdtemp(join(tmpdir(), 'gatehouse-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: WAIT_MS,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      `--host-resolver-rules=${hostRules}`,
    ],
  });
  context.setDefaultTimeout(WAIT_MS);
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A CDP virtual authenticator on a page's session (a platform one: internal, resident keys, user verification, presence
 * simulated); answers its id. `WebAuthn.enable` must have been sent on the session.
 */
export async function addVirtualAuthenticator(session: CDPSession): Promise<string> {
  const { authenticatorId } = await session.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return authenticatorId;
}

/** Where browser tests keep their screenshots (apps/server/test-artifacts/, not tracked). */
const ARTIFACTS = join(import.meta.dirname, '..', '..', 'test-artifacts');

/**
 * A full-page screenshot of `page`, kept as a test artifact `<name>.png`. Chromium sometimes refuses one capture
 * ("Protocol error (Page.captureScreenshot): Unable to capture screenshot", seen once in a CI run under load) and takes
 * the same picture when asked again: that one error is retried, twice, a moment apart; any other fails the test.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  for (let attempt = 1; ; attempt++) {
    try {
      await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
      return;
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('Unable to capture screenshot')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}
