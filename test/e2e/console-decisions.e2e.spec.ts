import type { ConsoleMessage, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { chromiumForDescribe, consoleUrl, phoneContext, screenshot, scrollsSideways, signIn, unnamedControls } from '../support/browser';
import { CREDENTIAL_CANARY, oncegate, type GatewayFolder } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

const SUPPLIER_A = { payment_reference: 'payout-history-a1', amount_cents: 4200 };
const SUPPLIER_B = { payment_reference: 'payout-history-b2', amount_cents: 777 };

async function addApprover(folder: GatewayFolder, name: string): Promise<string> {
  const result = await oncegate(folder, ['approvers', 'add', name]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim();
}

/** The execution of the payout with this reference, once its approval is requested. */
async function awaitingApproval(folder: GatewayFolder, reference: string): Promise<string> {
  return eventually(
    async () => {
      const events = await readJournal(folder.dataDir, ['execution-']);
      const accepted = events.find(
        (event) => event.type === 'ExecutionAccepted' && (event.data as { record: { arguments: Record<string, unknown> } }).record.arguments['payment_reference'] === reference,
      );
      const id = accepted?.metadata['executionId'] as string | undefined;
      return events.some((event) => event.type === 'ApprovalRequested' && event.metadata['executionId'] === id) ? id : undefined;
    },
    15_000,
    `the approval request of ${reference}`,
  );
}

async function decisionEvents(folder: GatewayFolder, executionId: string) {
  return (await readJournal(folder.dataDir, [`execution-${executionId}`])).filter((event) => event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied');
}

async function waitForText(page: Page, selector: string, pattern: RegExp, what: string): Promise<string> {
  return eventually(async () => {
    const text = (await page.locator(selector).first().textContent().catch(() => null)) ?? '';
    return pattern.test(text) ? text : undefined;
  }, 15_000, what);
}

describe('the console decision history, counts and refusals in Chromium', () => {
  const scenario = gatewayScenario();
  const { browser } = chromiumForDescribe();

  it('given the sign-in page, when it loads and an approver signs in, then the browser logs nothing at all', { timeout: 60_000 }, async () => {
    const token = await addApprover(scenario.folder, 'alice');
    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      const logged: string[] = [];
      page.on('console', (message: ConsoleMessage) => logged.push(`${message.type()}: ${message.text()}`));
      page.on('pageerror', (error) => logged.push(`pageerror: ${error.message}`));
      await page.goto(consoleUrl(scenario.gateway.url));
      await page.getByLabel('Approver token').waitFor();
      await page.waitForLoadState('networkidle');
      expect(logged).toEqual([]);
      await page.getByLabel('Approver token').fill(token);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('navigation', { name: 'Console' }).waitFor();
      await page.waitForLoadState('networkidle');
      expect(logged).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it('given two payouts decided in the browser, when the Decisions page is searched by reason, decision and approver, then it shows who decided what and why, newest first, with what followed and a link to the incident view', { timeout: 120_000 }, async () => {
    const token = await addApprover(scenario.folder, 'alice');
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const calls = [client.callTool({ name: 'send_payout', arguments: SUPPLIER_A }), client.callTool({ name: 'send_payout', arguments: SUPPLIER_B })];
    const granted = await awaitingApproval(scenario.folder, SUPPLIER_A.payment_reference);
    const denied = await awaitingApproval(scenario.folder, SUPPLIER_B.payment_reference);

    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      await signIn(page, scenario.gateway.url, token);
      const nav = page.getByRole('navigation', { name: 'Console' });
      await waitForText(page, 'nav a[href="#/approvals"]', /^Approvals 2 waiting$/, 'two approvals counted');

      const approve = page.getByRole('article').filter({ hasText: granted });
      await approve.getByLabel('Reason for the decision').fill('supplier invoice 5120 matches the order');
      await approve.getByRole('button', { name: 'Approve' }).click();
      await approve.getByRole('button', { name: 'Approve and send' }).click();
      await approve.getByRole('status').waitFor();
      const deny = page.getByRole('article').filter({ hasText: denied });
      await deny.getByLabel('Reason for the decision').fill('duplicate of payout 5119');
      await deny.getByRole('button', { name: 'Deny' }).click();
      await deny.getByRole('status').waitFor();
      await waitForText(page, 'nav a[href="#/approvals"]', /^Approvals 0 waiting$/, 'no approval left');
      // The denied card says what followed too: the call was denied and nothing was sent.
      await eventually(async () => ((await deny.locator('.followed').getAttribute('data-state').catch(() => null)) === 'denied' ? true : undefined), 20_000, 'the denial settled');

      await nav.getByRole('link', { name: 'Decisions' }).click();
      const results = page.getByRole('article');
      await page.getByRole('heading', { name: 'Decisions' }).waitFor();
      await eventually(async () => ((await results.count()) === 2 ? true : undefined), 10_000, 'both decisions listed');
      const listed = await results.allTextContents();
      expect(listed[0]).toContain(denied);
      expect(listed[0]).toMatch(/approval denied by approver:alice at \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+/);
      expect(listed[0]).toContain('duplicate of payout 5119');
      expect(listed[1]).toContain(granted);
      expect(listed[1]).toContain('supplier invoice 5120 matches the order');
      expect(await unnamedControls(page)).toEqual([]);
      expect(await scrollsSideways(page)).toBe(false);

      const search = page.getByRole('search', { name: 'Search the decisions' });
      // The page answers a search once its request is answered: the list read is the one that answer rendered (the
      // status of the search before stays until then, so it alone cannot tell).
      const searched = async (fill: () => Promise<void>) => {
        await fill();
        const answered = page.waitForResponse((response) => new URL(response.url()).pathname.endsWith('/decisions') && response.request().method() === 'GET');
        await search.getByRole('button', { name: 'Search' }).click();
        const { decisions } = (await (await answered).json()) as { decisions: unknown[] };
        return eventually(async () => {
          const status = (await page.getByRole('status').first().textContent()) ?? '';
          const shown = await results.allTextContents();
          return /match|newest first/.test(status) && shown.length === decisions.length ? shown : undefined;
        });
      };
      const byReason = await searched(() => search.getByLabel('Reason contains').fill('DUPLICATE'));
      expect(byReason).toHaveLength(1);
      expect(byReason[0]).toContain(denied);
      const byDecision = await searched(async () => {
        await search.getByLabel('Reason contains').fill('');
        await search.getByLabel('Decision').selectOption('granted');
      });
      expect(byDecision).toHaveLength(1);
      expect(byDecision[0]).toContain(granted);
      expect(byDecision[0]).toMatch(/What followed\s*completed: the target answered \(status 20\d\)/);
      const byApprover = await searched(async () => {
        await search.getByLabel('Decision').selectOption('');
        await search.getByLabel('Approver').fill('bob');
      });
      expect(byApprover).toEqual([]);
      await expect(page.getByRole('status').first().textContent()).resolves.toBe('No decision matches.');
      const inRange = await searched(async () => {
        await search.getByLabel('Approver').fill('alice');
        await search.getByLabel('From (local time)').fill('2000-01-01T00:00:00');
        await search.getByLabel('To (local time)').fill('2001-01-01T00:00:00');
      });
      expect(inRange).toEqual([]);
      const everything = await searched(async () => {
        await search.getByLabel('From (local time)').fill('');
        await search.getByLabel('To (local time)').fill('');
      });
      expect(everything).toHaveLength(2);
      const content = await page.content();
      expect(content).not.toContain(CREDENTIAL_CANARY);
      expect(content).not.toContain(CREDENTIAL_CANARY.slice(0, 12));
      await page.setViewportSize({ width: 1100, height: 900 });
      await screenshot(page, 'console-decisions.png');
      await page.setViewportSize({ width: 390, height: 844 });

      // An approver in Berlin reads the same decision in their own time, with the zone; the instant is on hover.
      const berlin = await browser().newContext({ viewport: { width: 390, height: 844 }, timezoneId: 'Europe/Berlin', locale: 'de-DE' });
      try {
        const there = await berlin.newPage();
        await signIn(there, scenario.gateway.url, token);
        await there.goto(consoleUrl(scenario.gateway.url, '#/decisions'));
        const time = there.getByRole('article').filter({ hasText: denied }).locator('time').first();
        const instant = (await time.getAttribute('title'))!;
        const shown = new Date(Date.parse(instant) + 60 * 60_000).toISOString();
        expect(await time.textContent()).toBe(`${shown.slice(0, 10)} ${shown.slice(11, 19)} CET`);
      } finally {
        await berlin.close();
      }

      // A decision links to the incident view of its execution.
      await results.filter({ hasText: granted }).getByRole('link', { name: granted }).click();
      await page.getByRole('heading', { name: 'Incident view' }).waitFor();
      expect(page.url()).toContain(`#/incident/${granted}`);
      await page.getByRole('list', { name: 'Events in order' }).waitFor();
    } finally {
      await context.close();
    }
    await Promise.all(calls);
    await client.close();
    expect((await decisionEvents(scenario.folder, granted)).map((event) => event.type)).toEqual(['ApprovalGranted']);
    expect((await decisionEvents(scenario.folder, denied)).map((event) => event.type)).toEqual(['ApprovalDenied']);
  });

  it('given a pending payout, when the network is down, the anti-forgery token is stale, or the session ends, then each refusal says what happened and nothing is decided', { timeout: 120_000 }, async () => {
    const token = await addApprover(scenario.folder, 'alice');
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payout', arguments: SUPPLIER_A }).catch((error: unknown) => error);
    const executionId = await awaitingApproval(scenario.folder, SUPPLIER_A.payment_reference);

    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      await signIn(page, scenario.gateway.url, token);
      const card = page.getByRole('article').filter({ hasText: executionId });
      await card.getByLabel('Reason for the decision').fill('checked with the supplier');
      const approve = async () => {
        await card.getByRole('button', { name: 'Approve' }).click();
        await card.getByRole('button', { name: 'Approve and send' }).click();
        return (await card.getByRole('alert').textContent()) ?? '';
      };

      // The network is down: the page cannot know whether the decision arrived, and says so.
      await context.setOffline(true);
      await expect(approve()).resolves.toMatch(/^Not confirmed: the gateway did not answer .*refresh to see before deciding again/);
      await context.setOffline(false);

      // The browser's cookie now names a newer session (a sign-in elsewhere): this tab's anti-forgery token no longer matches.
      const renewed = await fetch(new URL('/console/api/session', scenario.gateway.url), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      });
      const value = /^oncegate_console=([^;]+)/.exec(renewed.headers.get('set-cookie') ?? '')![1]!;
      await context.addCookies([{ name: 'oncegate_console', value, domain: new URL(scenario.gateway.url).hostname, path: '/console', httpOnly: true, sameSite: 'Strict' }]);
      await expect(approve()).resolves.toMatch(/^Refused: this page no longer holds the session's anti-forgery token.*nothing was recorded/);

      // The approver is revoked: the session ends, and the page goes back to the sign-in form saying why.
      expect((await oncegate(scenario.folder, ['approvers', 'revoke', 'alice'])).code).toBe(0);
      await page.getByLabel('Approver token').waitFor({ timeout: 30_000 });
      await expect(page.getByRole('status').textContent()).resolves.toMatch(/^Your session ended .*Sign in again/);
    } finally {
      await context.close();
    }
    expect(await decisionEvents(scenario.folder, executionId)).toEqual([]);
    await client.close();
    await call;
  });

  it('given an irreversible payment held for review, when one approver asks to send it again and a second confirms, then each step first says what will be sent, and only the confirmation sends it', { timeout: 120_000 }, async () => {
    const alice = await addApprover(scenario.folder, 'alice');
    const bob = await addApprover(scenario.folder, 'bob');
    await scenario.target.control('hang', { match: 'POST /payments', times: 1 });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const first = await client.callTool({ name: 'send_payment', arguments: { payment_reference: 'order-resend-0001', amount_cents: 990, card_token: 'tok_resend_canary_9d1c' } });
    const executionId = executionOf(first).id;
    const events = () => readJournal(scenario.folder.dataDir, [`execution-${executionId}`]);
    await eventually(async () => ((await events()).some((event) => event.type === 'ReviewRequired') ? true : undefined));

    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      await signIn(page, scenario.gateway.url, alice);
      await page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: /Review queue/ }).click();
      await waitForText(page, 'nav a[href="#/reviews"]', /^Review queue 1 waiting$/, 'one review counted');
      const card = page.getByRole('article').filter({ hasText: executionId });
      await card.getByRole('radio', { name: /Not executed/ }).check();
      await card.getByRole('checkbox', { name: /Send it again now/ }).check();
      await card.getByLabel('Reason for the resolution').fill('the processor has no charge for order-resend-0001');
      await card.getByRole('button', { name: 'Resolve' }).click();
      await expect(card.locator('.confirm').textContent()).resolves.toMatch(
        new RegExp(`^This asks a second operator to send it again: demo/payments: POST http://127\\.0\\.0\\.1:\\d+/payments, with the recorded arguments, as attempt 2 under execution ${executionId}`),
      );
      expect((await events()).some((event) => event.type === 'ReviewResolved')).toBe(false);
      await card.getByRole('button', { name: 'Ask for the resend' }).click();
      await expect(card.getByRole('status').textContent()).resolves.toMatch(/waits for a second operator/);

      // A second operator, in a browser of their own.
      const second = await (await phoneContext(browser())).newPage();
      await signIn(second, scenario.gateway.url, bob);
      await second.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: /Review queue/ }).click();
      const confirming = second.getByRole('article').filter({ hasText: executionId });
      await confirming.getByLabel('Reason for confirming the resend').fill('the ledger agrees: never charged');
      await confirming.getByRole('button', { name: 'Confirm the resend' }).click();
      await expect(confirming.locator('.confirm').textContent()).resolves.toMatch(new RegExp(`^This sends it again now: demo/payments: POST .*as attempt 2 under execution ${executionId}`));
      expect((await events()).filter((event) => event.type === 'Dispatched')).toHaveLength(1);
      await confirming.getByRole('button', { name: 'Send it again' }).click();
      await expect(confirming.getByRole('status').textContent()).resolves.toMatch(/confirmed by approver:bob/);
      expect(await second.content()).not.toContain('tok_resend_canary');
      await second.context().close();
    } finally {
      await context.close();
    }
    await eventually(async () => ((await events()).filter((event) => event.type === 'Dispatched').length === 2 ? true : undefined), 20_000, 'the resend dispatched');
    await client.close();
  });
});
