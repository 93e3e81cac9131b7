import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { chromiumUnavailable, consoleUrl, launchChromium, phoneContext, screenshot, scrollsSideways, signIn, unnamedControls } from '../support/browser';
import { freePort } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The README's walkthrough, run as written: `oncegate start` on the example configuration, then the script. */
describe('the README walkthrough', () => {
  const cleanup: Array<() => void> = [];
  afterEach(() => cleanup.splice(0).forEach((step) => step()));

  it('given the example configuration, when the walkthrough runs, then the dropped payment is attached and happened once, and the console\'s incident view shows it', { timeout: 120_000 }, async (context) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'oncegate-walkthrough-'));
    cleanup.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const port = await freePort();
    const env = { ...process.env, ONCEGATE_DATA_DIR: dataDir, ONCEGATE_PORT: String(port), ONCEGATE_DEMO_CREDENTIAL: 'walkthrough' };
    // What `npm start` runs: the demo's vault first, then the gateway.
    const vault = spawnSync('sh', ['examples/demo-vault.sh'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(vault.status, vault.stderr).toBe(0);
    const gateway = spawn(process.execPath, ['bin/oncegate.mjs', 'start', '--config', 'examples/oncegate.yaml'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise((resolve) => gateway.once('exit', resolve));
    cleanup.push(() => gateway.kill('SIGTERM'));
    const token = await new Promise<string>((resolve, reject) => {
      createInterface({ input: gateway.stdout! }).on('line', (line) => {
        const match = /dev token:\s+(ogt_\S+)/.exec(line);
        if (match) resolve(match[1]!);
      });
      gateway.once('exit', (code) => reject(new Error(`gateway exited with ${code}`)));
    });

    const walkthrough = spawn(process.execPath, ['--import', 'tsx', 'examples/walkthrough.ts'], {
      cwd: ROOT,
      env: { ...process.env, ONCEGATE_URL: `http://127.0.0.1:${port}/mcp`, ONCEGATE_TOKEN: token, ONCEGATE_DATA_DIR: dataDir },
    });
    cleanup.push(() => walkthrough.kill('SIGTERM'));
    let output = '';
    walkthrough.stdout.on('data', (chunk) => (output += String(chunk)));
    walkthrough.stderr.on('data', (chunk) => (output += String(chunk)));
    const code = await new Promise((resolve) => walkthrough.once('exit', resolve));

    expect(code, output).toBe(0);
    expect(output).toMatch(/attached=true, state=completed_result_not_delivered/);
    expect(output).toMatch(/payments at the target: 1 \(one effect/);
    // The journal the README describes, in its order.
    const types = await eventually(async () => {
      const events = (await readJournal(dataDir, ['execution-'])).map((event) => event.type);
      return events.includes('ResultDelivered') ? events : undefined;
    });
    expect(types.filter((type) => ['Dispatched', 'ResultDeliveryFailed', 'RetryAttached', 'ResultDelivered'].includes(type))).toEqual([
      'Dispatched',
      'ResultDeliveryFailed',
      'RetryAttached',
      'ResultDelivered',
    ]);

    // The console's incident view of that execution: its events in the journal's order, and the attached retry.
    const unavailable = chromiumUnavailable();
    // Without Chromium the rest cannot be checked: the test says so (skipped, with the reason) rather than pass.
    if (unavailable !== undefined) {
      gateway.kill('SIGTERM');
      await exited;
      context.skip(`the console part of the walkthrough: ${unavailable}`);
    }
    const executionId = /execution (ex_\w+): attached=true/.exec(output)![1]!;
    const approver = spawnSync(process.execPath, ['bin/oncegate.mjs', 'approvers', 'add', 'analyst', '--config', 'examples/oncegate.yaml'], { cwd: ROOT, env, encoding: 'utf8' });
    expect(approver.status, approver.stderr).toBe(0);
    const journal = (await readJournal(dataDir, [`execution-${executionId}`])).map((event) => event.type);
    const browser = await launchChromium();
    try {
      const page = await (await phoneContext(browser)).newPage();
      const gatewayUrl = `http://127.0.0.1:${port}/mcp`;
      await signIn(page, gatewayUrl, approver.stdout.trim());
      await page.goto(consoleUrl(gatewayUrl, `#/incident/${executionId}`));
      const timeline = page.getByRole('list', { name: 'Events in order' });
      await timeline.waitFor();
      const shown = await timeline.locator('li').evaluateAll((items) => items.map((item) => item.getAttribute('data-type')));
      expect(shown.filter((type) => type !== 'IntentClaimed')).toEqual(journal);
      const retries = await page.getByRole('list', { name: 'Attached retries' }).getByRole('listitem').allTextContents();
      expect(retries).toHaveLength(1);
      expect(retries[0]).toMatch(new RegExp(`attached to ${executionId}, given`));
      expect(await unnamedControls(page)).toEqual([]);
      expect(await scrollsSideways(page)).toBe(false);
      expect(await page.content()).not.toContain('tok_walkthrough_demo');
      await page.setViewportSize({ width: 1100, height: 900 });
      await screenshot(page, 'console-incident.png');
    } finally {
      await browser.close();
    }
    gateway.kill('SIGTERM');
    await exited;
  });
});
