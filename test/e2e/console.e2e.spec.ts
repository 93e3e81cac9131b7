import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  chromiumForDescribe,
  consoleUrl,
  phoneContext,
  screenshot,
  scrollsSideways,
  signIn,
  unnamedControls,
} from '../support/browser';
import { CREDENTIAL_CANARY, oncegate, type GatewayFolder } from '../support/gateway-process';
import { eventually, readJournal } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

const PAYOUT = { payment_reference: 'payout-console-01', amount_cents: 1250 };
/** A secret argument (`card_token`): only its HMAC may ever be shown. */
const CARD_CANARY = 'tok_console_canary_4b7e21';
const PAYMENT = { payment_reference: 'order-console-0001', amount_cents: 990, card_token: CARD_CANARY };

/** The canaries and their first characters: none may appear in a page or an API answer. */
function expectNoSecret(text: string): void {
  for (const canary of [CREDENTIAL_CANARY, CARD_CANARY]) {
    expect(text).not.toContain(canary);
    expect(text).not.toContain(canary.slice(0, 12));
  }
}

async function addApprover(folder: GatewayFolder, name: string): Promise<string> {
  const result = await oncegate(folder, ['approvers', 'add', name]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function eventsOf(folder: GatewayFolder, executionId: string) {
  return readJournal(folder.dataDir, [`execution-${executionId}`]);
}

/** The id of the first execution whose stream holds an event of `type`. */
async function executionWith(folder: GatewayFolder, type: string): Promise<string> {
  return eventually(
    async () => (await readJournal(folder.dataDir, ['execution-'])).find((event) => event.type === type)?.metadata['executionId'] as string | undefined,
    15_000,
    type,
  );
}

/** What `fetch` in the page answers: status and body text. */
async function fetchInPage(page: Page, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return page.evaluate(
    async ([target, options]) => {
      const response = await fetch(target, { ...options, credentials: 'include' });
      return { status: response.status, body: await response.text() };
    },
    [url, init] as const,
  );
}

function apiUrl(gatewayUrl: string, path: string): string {
  return new URL(`/console/api/${path}`, gatewayUrl).toString();
}

/**
 * Content-Security-Policy violations the page logged and errors it threw. (A 401 the page expects, asking for a
 * session before sign-in, is logged too, and is not one of them.)
 */
function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/i.test(message.text())) errors.push(message.text());
  });
  page.on('pageerror', (error) => errors.push(error.message));
  return errors;
}

describe('the operator console in Chromium', () => {
  const scenario = gatewayScenario();
  const { browser } = chromiumForDescribe();

  it('given a payout waiting for approval, when an approver approves it in the browser, then the agent\'s call completes with one effect at the target', { timeout: 90_000 }, async () => {
    expect(scenario.gateway.output()).toContain(`console:      ${consoleUrl(scenario.gateway.url)}`);
    const token = await addApprover(scenario.folder, 'alice');
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT });
    const executionId = await executionWith(scenario.folder, 'ApprovalRequested');

    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      const errors = pageErrors(page);
      await signIn(page, scenario.gateway.url, token);
      const card = page.getByRole('article').filter({ hasText: executionId });
      await card.waitFor();
      for (const shown of ['agent:dev', 'send_payout', 'irreversible', 'demo/payments', 'payout-console-01', 'this one execution', 'expires in', 'Attached retries']) {
        await expect(card.textContent()).resolves.toContain(shown);
      }
      expect(await unnamedControls(page)).toEqual([]);
      expect(await scrollsSideways(page)).toBe(false);
      expectNoSecret(await page.content());
      expectNoSecret((await fetchInPage(page, apiUrl(scenario.gateway.url, 'approvals'))).body);
      // The approver token is in no storage the page can read, and the session cookie is HttpOnly and SameSite=Strict.
      const storage = await page.evaluate<string>('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie');
      expect(storage).not.toContain(token);
      expect(storage).not.toContain('oga_');
      const [cookie] = await context.cookies();
      expect(cookie).toMatchObject({ name: 'oncegate_console', httpOnly: true, sameSite: 'Strict', path: '/console' });
      expect(cookie!.value).not.toContain(token);

      await page.setViewportSize({ width: 1100, height: 900 });
      await screenshot(page, 'console-approvals.png');
      await page.setViewportSize({ width: 390, height: 844 });

      // The navigation counts what waits, and says when it last refreshed.
      const approvalsLink = page.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: /Approvals/ });
      await eventually(async () => ((await approvalsLink.textContent()) === 'Approvals 1 waiting' ? true : undefined), 10_000, 'the count of waiting approvals');
      await expect(page.locator('.refreshed').textContent()).resolves.toMatch(/^Last refreshed \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+$/);

      // An irreversible call is approved only after the approver has seen what will be sent.
      await card.getByLabel('Reason for the decision').fill('supplier invoice 4411 checked');
      await card.getByRole('button', { name: 'Approve' }).click();
      const confirmation = card.getByRole('group');
      await expect(confirmation.textContent()).resolves.toMatch(new RegExp(`sends this irreversible call now.*demo/payments: POST http://127\\.0\\.0\\.1:\\d+/payments.*under execution ${executionId}`));
      expect(await eventsOf(scenario.folder, executionId).then((events) => events.some((event) => event.type === 'ApprovalGranted'))).toBe(false);
      await card.getByRole('button', { name: 'Approve and send' }).click();
      await expect(card.getByRole('status').textContent()).resolves.toMatch(/Recorded: granted by approver:alice/);

      // The decided card stays, under Recently decided, with what followed: dispatched, then the target's answer.
      const recent = page.getByRole('region', { name: 'Recently decided' });
      await recent.getByRole('article').filter({ hasText: executionId }).waitFor();
      const followed = card.locator('.followed');
      await eventually(async () => ((await followed.getAttribute('data-state').catch(() => null)) ?? '').match(/^(completed|delivered|completed_result_not_delivered)$/) ?? undefined, 20_000, 'what followed');
      await expect(followed.textContent()).resolves.toMatch(/^completed: the target answered \(status 20\d\)/);
      await expect(card.textContent()).resolves.not.toContain('awaiting_approval');
      expect(await scrollsSideways(page)).toBe(false);
      expect(await unnamedControls(page)).toEqual([]);
      await eventually(async () => ((await approvalsLink.textContent()) === 'Approvals 0 waiting' ? true : undefined), 10_000, 'the count after the decision');
      // Times are local with their zone; the exact instant is on hover.
      const requested = card.locator('time').first();
      await expect(requested.textContent()).resolves.toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} \S+$/);
      await expect(requested.getAttribute('title')).resolves.toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect(errors).toEqual([]);

      // Signing out ends the session in the gateway, not only in the page.
      await page.getByRole('button', { name: 'Sign out' }).click();
      await page.getByLabel('Approver token').waitFor();
      expect((await fetchInPage(page, apiUrl(scenario.gateway.url, 'approvals'))).status).toBe(401);
    } finally {
      await context.close();
    }

    const result = await call;
    await client.close();
    expect(executionOf(result)).toMatchObject({ id: executionId });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(result).state);
    const payments = (await scenario.target.effects()).requests.filter((request) => request.endpoint === 'POST /payments');
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({ idempotencyKey: executionId });
    const events = await eventsOf(scenario.folder, executionId);
    expect(events.find((event) => event.type === 'ApprovalGranted')?.data).toMatchObject({ by: 'approver:alice', reason: 'supplier invoice 4411 checked' });
    expect(events.filter((event) => event.type === 'Dispatched')).toHaveLength(1);
  });

  it('given two pages showing one request, when one approves and the other denies at once, then one decision is recorded and the other page is told why it was refused', { timeout: 90_000 }, async () => {
    const alice = await addApprover(scenario.folder, 'alice');
    const bob = await addApprover(scenario.folder, 'bob');
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT });
    const executionId = await executionWith(scenario.folder, 'ApprovalRequested');

    const contexts = [await phoneContext(browser()), await phoneContext(browser())];
    try {
      const pages = await Promise.all(contexts.map((context) => context.newPage()));
      await signIn(pages[0]!, scenario.gateway.url, alice);
      await signIn(pages[1]!, scenario.gateway.url, bob);
      const cards = pages.map((page) => page.getByRole('article').filter({ hasText: executionId }));
      for (const card of cards) {
        await card.waitFor();
        await card.getByLabel('Reason for the decision').fill('checked on both screens');
      }
      await cards[0]!.getByRole('button', { name: 'Approve' }).click();
      await Promise.all([cards[0]!.getByRole('button', { name: 'Approve and send' }).click(), cards[1]!.getByRole('button', { name: 'Deny' }).click()]);
      const said = await Promise.all(cards.map((card) => card.locator('[role=status], [role=alert]').first().textContent()));
      const recorded = said.filter((text) => text?.startsWith('Recorded:'));
      const refused = said.filter((text) => text?.startsWith('Refused:'));
      expect(recorded, said.join(' | ')).toHaveLength(1);
      expect(refused, said.join(' | ')).toHaveLength(1);
      expect(refused[0]).toMatch(new RegExp(`^Refused: someone decided first\\. execution ${executionId} is not awaiting approval: already (granted|denied) by approver:(alice|bob)`));
    } finally {
      await Promise.all(contexts.map((context) => context.close()));
    }

    const decisions = (await eventsOf(scenario.folder, executionId)).filter((event) => event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied');
    expect(decisions).toHaveLength(1);
    const result = await call;
    await client.close();
    const effects = (await scenario.target.effects()).byEndpoint['POST /payments'] ?? 0;
    expect(effects).toBe(decisions[0]!.type === 'ApprovalGranted' ? 1 : 0);
    expect(executionOf(result).id).toBe(executionId);
  });

  it('given an irreversible payment held for review, when an approver resolves it as completed in the browser, then the execution is completed and nothing is sent again', { timeout: 90_000 }, async () => {
    const token = await addApprover(scenario.folder, 'alice');
    await scenario.target.control('hang', { match: 'POST /payments' });
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    const first = await client.callTool({ name: 'send_payment', arguments: PAYMENT });
    const executionId = executionOf(first).id;
    await eventually(async () => ((await eventsOf(scenario.folder, executionId)).some((event) => event.type === 'ReviewRequired') ? true : undefined));

    const context = await phoneContext(browser());
    try {
      const page = await context.newPage();
      const errors = pageErrors(page);
      await signIn(page, scenario.gateway.url, token);
      await page.getByRole('link', { name: 'Review queue' }).click();
      const card = page.getByRole('article').filter({ hasText: executionId });
      await card.waitFor();
      await expect(card.textContent()).resolves.toContain('irreversible_outcome_unknown');
      // The target as the contract renders it, and what was observed of the attempt.
      await expect(card.textContent()).resolves.toMatch(/demo\/payments: POST http:\/\/127\.0\.0\.1:\d+\/payments/);
      const evidence = card.locator('.evidence');
      await expect(evidence.textContent()).resolves.toMatch(/Dispatched.*OutcomeUnknown.*(timeout|deadline|lost|reset)/s);
      expect(await unnamedControls(page)).toEqual([]);
      expect(await scrollsSideways(page)).toBe(false);
      expectNoSecret(await page.content());
      expectNoSecret((await fetchInPage(page, apiUrl(scenario.gateway.url, 'reviews'))).body);

      // Resolving without a resolution says so, and records nothing.
      await card.getByLabel('Reason for the resolution').fill('the processor shows the charge for order-console-0001');
      await card.getByRole('button', { name: 'Resolve' }).click();
      await expect(card.getByRole('alert').textContent()).resolves.toMatch(/^Choose a resolution first/);
      await card.getByRole('radio', { name: /Completed/ }).check();
      await card.getByRole('button', { name: 'Resolve' }).click();
      await expect(card.getByRole('status').textContent()).resolves.toMatch(/resolved as completed by approver:alice; the execution is now completed/);
      // The resolved card says what followed, from the decision history.
      await expect(card.locator('.followed').getAttribute('data-state')).resolves.toBe('completed');
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }

    const events = await eventsOf(scenario.folder, executionId);
    expect(events.find((event) => event.type === 'ReviewResolved')?.data).toMatchObject({ resolution: 'completed', by: 'approver:alice' });
    expect(events.filter((event) => event.type === 'Dispatched')).toHaveLength(1);
    const retry = await client.callTool({ name: 'send_payment', arguments: PAYMENT });
    await client.close();
    expect(executionOf(retry)).toMatchObject({ id: executionId, attached: true, attempts: 1 });
    expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(executionOf(retry).state);
    expect((await scenario.target.effects()).byEndpoint['POST /payments']).toBe(1);
  });

  it('given a pending request, when the console is reached from a foreign origin, without a valid approver token, or with a decision lacking the anti-forgery token, then no data is shown and nothing is decided', { timeout: 90_000 }, async () => {
    const token = await addApprover(scenario.folder, 'alice');
    const { client } = await connectClient(scenario.gateway.url, scenario.gateway.devToken, {});
    const call = client.callTool({ name: 'send_payout', arguments: PAYOUT }).catch((error: unknown) => error);
    const executionId = await executionWith(scenario.folder, 'ApprovalRequested');
    const api = (path: string) => apiUrl(scenario.gateway.url, path);

    // A foreign page (another origin on this machine) that tries to read and decide.
    const foreign: Server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><title>elsewhere</title><p>elsewhere</p>');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    const foreignUrl = `http://127.0.0.1:${(foreign.address() as { port: number }).port}/`;

    const contexts = [await phoneContext(browser()), await phoneContext(browser())];
    try {
      // Signed in, with the session cookie in the browser.
      const page = await contexts[0]!.newPage();
      const loaded = await page.goto(consoleUrl(scenario.gateway.url));
      expect(loaded!.headers()['content-security-policy']).toMatch(/script-src 'self';/);
      expect(loaded!.headers()['content-security-policy']).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(await page.locator('script:not([src])').count()).toBe(0);
      await signIn(page, scenario.gateway.url, token);
      await page.getByRole('article').filter({ hasText: executionId }).waitFor();

      // Decisions without the session's anti-forgery token, or with a wrong one, are refused.
      const body = JSON.stringify({ reason: 'no token' });
      const bare = await fetchInPage(page, api(`approvals/${executionId}/approve`), { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      expect(bare.status).toBe(403);
      expect(JSON.parse(bare.body)).toMatchObject({ error: { code: 'csrf_required' } });
      const forged = await fetchInPage(page, api(`approvals/${executionId}/deny`), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-oncegate-csrf': 'forged' },
        body,
      });
      expect(forged.status).toBe(403);
      const resolveWithout = await fetchInPage(page, api(`reviews/${executionId}/resolve`), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ resolution: 'completed', reason: 'no token' }),
      });
      expect(resolveWithout.status).toBe(403);

      // The same browser on a foreign page: its requests carry the session cookie, and are refused by Origin.
      await page.goto(foreignUrl);
      const fromElsewhere = await page.evaluate(async (target) => {
        const answers: string[] = [];
        try {
          const read = await fetch(target.read, { credentials: 'include' });
          answers.push(`read ${read.status} ${await read.text()}`);
        } catch (error) {
          answers.push(`read blocked: ${String(error)}`);
        }
        await fetch(target.decide, { method: 'POST', mode: 'no-cors', credentials: 'include', headers: { 'content-type': 'text/plain' }, body: '{"reason":"x"}' }).catch(() => undefined);
        return answers.join('\n');
      }, { read: api('approvals'), decide: api(`approvals/${executionId}/approve`) });
      expect(fromElsewhere).not.toContain(executionId);

      // A page load that names a foreign Origin is refused before anything is read.
      const other = await contexts[1]!.newPage();
      await other.setExtraHTTPHeaders({ origin: 'http://evil.example' });
      const refused = await other.goto(consoleUrl(scenario.gateway.url));
      expect(refused!.status()).toBe(403);
      expect(await other.content()).not.toContain(executionId);
      await other.setExtraHTTPHeaders({});

      // Without a session: the sign-in form and no data; a wrong token or an agent token does not sign in.
      await other.goto(consoleUrl(scenario.gateway.url));
      await other.getByLabel('Approver token').waitFor();
      expect(await other.content()).not.toContain(executionId);
      expect(await unnamedControls(other)).toEqual([]);
      expect(await scrollsSideways(other)).toBe(false);
      for (const wrong of [`${token.slice(0, -4)}AAAA`, scenario.gateway.devToken]) {
        await other.getByLabel('Approver token').fill(wrong);
        await other.getByRole('button', { name: 'Sign in' }).click();
        await expect(other.getByRole('alert').textContent()).resolves.toMatch(/approver token/);
        expect(await other.content()).not.toContain(executionId);
      }
      const anonymous = await fetchInPage(other, api('approvals'));
      expect(anonymous.status).toBe(401);
      expect(anonymous.body).not.toContain(executionId);
      const withBearer = await fetch(api('approvals'), { headers: { authorization: `Bearer ${token}` } });
      expect(withBearer.status).toBe(401);
    } finally {
      await Promise.all(contexts.map((context) => context.close()));
      await new Promise((resolve) => foreign.close(resolve));
    }

    const events = await eventsOf(scenario.folder, executionId);
    expect(events.filter((event) => event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied')).toHaveLength(0);
    expect((await scenario.target.effects()).requestsTotal).toBe(0);
    await client.close();
    await call;
  });
});
