import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/** Debian's Chromium (`apt-get install chromium`; `.ci/run` installs it); `ONCEGATE_CHROMIUM` names another. */
export const CHROMIUM = process.env['ONCEGATE_CHROMIUM'] ?? '/usr/bin/chromium';

/** Why the browser tests cannot run here, or `undefined` when they can. */
export function chromiumUnavailable(): string | undefined {
  return existsSync(CHROMIUM) ? undefined : `no Chromium at ${CHROMIUM} (apt-get install chromium, or set ONCEGATE_CHROMIUM)`;
}

/** Headless Chromium; every test file closes it in its `afterAll`. */
export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 30_000,
    // The suites run as root in CI, where Chromium's sandbox cannot start.
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/**
 * One headless Chromium for the tests of the calling `describe`: launched before the first, closed after the last;
 * without a Chromium each test is skipped saying why. `browser()` is the one launched.
 */
export function chromiumForDescribe(): { browser(): Browser } {
  const unavailable = chromiumUnavailable();
  let launched: Browser | undefined;
  beforeAll(async () => {
    if (unavailable === undefined) launched = await launchChromium();
  });
  afterAll(async () => {
    await launched?.close();
  });
  beforeEach((context) => {
    if (unavailable !== undefined) context.skip(unavailable);
  });
  return { browser: () => launched! };
}

/** A phone-sized browser context (390 px wide), as the console's layout must work at. */
export async function phoneContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
  context.setDefaultTimeout(15_000);
  return context;
}

/** Opens `/console/` of the gateway at `gatewayUrl` and signs in with an approver token, as a person would. */
export async function signIn(page: Page, gatewayUrl: string, token: string): Promise<void> {
  await page.goto(consoleUrl(gatewayUrl));
  await page.getByLabel('Approver token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

export function consoleUrl(gatewayUrl: string, hash = ''): string {
  return new URL(`/console/${hash}`, gatewayUrl).toString();
}

/**
 * The controls (buttons, text fields, radios, links…) the accessibility tree shows without a name: each line of
 * Playwright's ARIA snapshot for a control role that carries no quoted name.
 */
export async function unnamedControls(page: Page): Promise<string[]> {
  const snapshot = await page.locator('body').ariaSnapshot();
  return snapshot
    .split('\n')
    .filter((line) => /^\s*- (button|textbox|radio|checkbox|link|combobox|searchbox|spinbutton|slider|switch|tab|menuitem)\b(?!\s+")/.test(line));
}

/** Whether the page scrolls sideways at its current width. */
export async function scrollsSideways(page: Page): Promise<boolean> {
  // An expression, evaluated in the page (this file is compiled without the DOM's types).
  return page.evaluate<boolean>('document.documentElement.scrollWidth > document.documentElement.clientWidth');
}

/**
 * A full-page screenshot: always taken (so the code path runs), kept in a temporary folder, and copied to
 * `ONCEGATE_SCREENSHOTS_DIR` when that is set (`ONCEGATE_SCREENSHOTS_DIR=docs/images` refreshes the README's).
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const file = join(mkdtempSync(join(tmpdir(), 'oncegate-screenshot-')), name);
  await page.screenshot({ path: file, fullPage: true });
  const keep = process.env['ONCEGATE_SCREENSHOTS_DIR'];
  if (keep !== undefined && keep !== '') {
    mkdirSync(resolve(keep), { recursive: true });
    copyFileSync(file, join(resolve(keep), name));
  }
  return file;
}
