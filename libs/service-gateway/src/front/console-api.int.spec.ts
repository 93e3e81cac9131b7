import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { acceptedPayment, approvalTools, CARD_TOKEN_HMAC, command, ManualClock, paymentAwaitingApproval } from '@oncegate/host-decisions/testing';
import { AgentDirectory, ApproverDirectory } from '@oncegate/host-principals';
import { CONSOLE_CSP, ConsoleApi } from './console-api';
import { CSRF_HEADER } from './console-sessions';
import { apiFront } from './api-front-fixture';
import type { McpHttpFront } from './mcp-http-front';

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly state?: string };
}

describe('the console API on the MCP front (SQLite event store, real fetch)', () => {
  let dir: string;
  let store: EventStore;
  let cliStore: EventStore;
  let front: McpHttpFront;
  let base: string;
  let clock: ManualClock;
  let approverToken: string;
  let assetsDir: string;
  let approvers: ApproverDirectory;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-console-api-'));
    assetsDir = join(dir, 'console');
    mkdirSync(join(assetsDir, 'assets'), { recursive: true });
    writeFileSync(join(assetsDir, 'index.html'), '<!doctype html><script type="module" src="/console/assets/app-1.js"></script>');
    writeFileSync(join(assetsDir, 'assets', 'app-1.js'), 'export {};');
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    cliStore = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock(new Date().toISOString());
    approvers = new ApproverDirectory(store);
    const tools = approvalTools('https://payments.example');
    front = apiFront({ store, tools, clock, mounted: [new ConsoleApi({ store, approvers, tools, clock, assetsDir })] });
    base = new URL((await front.listen()).url).origin;
    approverToken = (await new ApproverDirectory(cliStore).issue('alice')).token;
  });

  afterEach(async () => {
    await front.close();
    await cliStore.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const signIn = async (token = approverToken) => {
    const response = await fetch(`${base}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token }) });
    const cookie = response.headers.get('set-cookie') ?? '';
    const body = (await response.json()) as { actor: string; csrfToken: string } & ErrorBody;
    return { response, cookie: cookie.split(';')[0]!, setCookie: cookie, body };
  };
  const decide = (cookie: string, id: ExecutionId, action: string, csrf: string | undefined, body: object = { reason: 'invoice checked' }) =>
    fetch(`${base}/console/api/approvals/${id}/${action}`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/json', ...(csrf === undefined ? {} : { [CSRF_HEADER]: csrf }) },
      body: JSON.stringify(body),
    });
  const typesOf = async (id: ExecutionId) => (await store.readStream(executionStream(id))).map((event) => event.type);

  it('given an approver token, when it signs in, then the answer sets an HttpOnly SameSite=Strict cookie for /console that does not hold the token', async () => {
    const { response, setCookie, body } = await signIn();
    expect(response.status).toBe(200);
    expect(body.actor).toBe('approver:alice');
    expect(setCookie).toMatch(/^oncegate_console=[\w-]{43}; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=1800$/);
    expect(setCookie).not.toContain(approverToken);
    expect(JSON.stringify(body)).not.toContain(approverToken);
  });

  it('given no session, an agent token or an unknown token, when the API is asked, then 401 and no data', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const anonymous = await fetch(`${base}/console/api/approvals`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).not.toContain(id);
    const bearer = await fetch(`${base}/console/api/approvals`, { headers: { authorization: `Bearer ${approverToken}` } });
    expect(bearer.status).toBe(401);
    const agent = (await new AgentDirectory(cliStore).issue('billing-bot')).token;
    expect((await signIn(agent)).response.status).toBe(401);
    expect((await signIn(`${approverToken.slice(0, -4)}AAAA`)).response.status).toBe(401);
    const forgedCookie = await fetch(`${base}/console/api/approvals`, { headers: { cookie: `oncegate_console=${'A'.repeat(43)}` } });
    expect(forgedCookie.status).toBe(401);
  });

  it('given a signed-in approver, when a decision comes without or with a wrong anti-forgery token, or as a form post, then it is refused and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const { cookie, body } = await signIn();
    const without = await decide(cookie, id, 'approve', undefined);
    expect(without.status).toBe(403);
    expect(((await without.json()) as ErrorBody).error.code).toBe('csrf_required');
    expect((await decide(cookie, id, 'deny', 'x'.repeat(43))).status).toBe(403);
    const form = await fetch(`${base}/console/api/approvals/${id}/approve`, {
      method: 'POST',
      headers: { cookie, [CSRF_HEADER]: body.csrfToken, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'reason=x',
    });
    expect(form.status).toBe(415);
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);

    const approved = await decide(cookie, id, 'approve', body.csrfToken);
    expect(approved.status).toBe(200);
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);
  });

  it('given two sessions deciding one request, when the second decides after the first, then 409 says who decided and one decision is recorded', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const bobToken = (await new ApproverDirectory(cliStore).issue('bob')).token;
    const alice = await signIn();
    const bob = await signIn(bobToken);
    expect((await decide(alice.cookie, id, 'deny', alice.body.csrfToken)).status).toBe(200);
    const late = await decide(bob.cookie, id, 'approve', bob.body.csrfToken);
    expect(late.status).toBe(409);
    expect(((await late.json()) as ErrorBody).error.message).toMatch(new RegExp(`execution ${id} is not awaiting approval: already denied by approver:alice at`));
    expect((await typesOf(id)).filter((type) => type.startsWith('Approval'))).toEqual(['ApprovalRequested', 'ApprovalDenied']);
  });

  it('given a signed-in approver, when the approver is revoked, then the session ends within the polling interval', async () => {
    const watch = approvers.watch();
    try {
      const { cookie } = await signIn();
      expect((await fetch(`${base}/console/api/approvals`, { headers: { cookie } })).status).toBe(200);
      await new ApproverDirectory(cliStore).revoke('alice');
      const deadline = Date.now() + 5_000;
      let status = 200;
      while (status === 200 && Date.now() < deadline) {
        status = (await fetch(`${base}/console/api/approvals`, { headers: { cookie } })).status;
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(status).toBe(401);
      // The session is gone for good, not only while the token is refused: asking who is signed in says nobody.
      const asked = await fetch(`${base}/console/api/session`, { headers: { cookie } });
      expect(asked.status).toBe(204);
      expect(asked.headers.get('set-cookie')).toMatch(/^oncegate_console=; .*Max-Age=0$/);
    } finally {
      await watch.stop();
    }
  });

  it('given the approvals list, when it is read, then arguments are the recorded HMACs and every answer carries the strict policy', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const { cookie } = await signIn();
    const listed = await fetch(`${base}/console/api/approvals`, { headers: { cookie } });
    const body = (await listed.json()) as { approvals: Array<{ executionId: string; arguments: Record<string, unknown> }> };
    expect(body.approvals.map((view) => view.executionId)).toEqual([id]);
    expect(body.approvals[0]!.arguments['card_token']).toBe(CARD_TOKEN_HMAC);
    expect(listed.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(listed.headers.get('cache-control')).toBe('no-store');
  });

  it('given the built pages, when they are fetched, then the page and its assets are served with the policy, and nothing else under /console is', async () => {
    const page = await fetch(`${base}/console/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const asset = await fetch(`${base}/console/assets/app-1.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await fetch(`${base}/console`, { redirect: 'manual' })).headers.get('location')).toBe('/console/');
    for (const path of ['/console/assets/..%2Findex.html', '/console/assets/missing.js', '/console/../events.db', '/console/other']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    }
    expect((await fetch(`${base}/console/`, { method: 'POST' })).status).toBe(405);
    rmSync(assetsDir, { recursive: true, force: true });
    const unbuilt = await fetch(`${base}/console/`);
    expect(unbuilt.status).toBe(503);
    expect(((await unbuilt.json()) as ErrorBody).error.message).toMatch(/npm run build/);
  });

  it('given an irreversible payment held for review, when approvers resolve it as not executed with a resend, then the first only asks, the same approver again is refused, a bad resend is refused, and a second approver sends it', async () => {
    const id = await acceptedPayment(store, clock);
    await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
    await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
    await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
    const resolve = (session: { cookie: string; body: { csrfToken: string } }, body: object) =>
      fetch(`${base}/console/api/reviews/${id}/resolve`, {
        method: 'POST',
        headers: { cookie: session.cookie, 'content-type': 'application/json', [CSRF_HEADER]: session.body.csrfToken },
        body: JSON.stringify(body),
      });
    const alice = await signIn();

    const bad = await resolve(alice, { resolution: 'not_executed', reason: 'no charge', resend: 'yes' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorBody).error.message).toBe('resend must be true or false when given');

    const asked = await resolve(alice, { resolution: 'not_executed', reason: 'no charge at the processor', resend: true });
    expect(asked.status).toBe(200);
    expect(await asked.json()).toMatchObject({ state: 'not_executed', review: { resend: { requestedBy: 'approver:alice', confirmedBy: null } } });
    const listed = (await (await fetch(`${base}/console/api/reviews`, { headers: { cookie: alice.cookie } })).json()) as { reviews: Array<{ executionId: string }> };
    expect(listed.reviews.map((view) => view.executionId)).toEqual([id]);

    const twice = await resolve(alice, { resolution: 'not_executed', reason: 'really', resend: true });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as ErrorBody).error.message).toMatch(/^by: approver:alice asked to send .* again already .*needs a second operator/);

    const bob = await signIn((await new ApproverDirectory(cliStore).issue('bob')).token);
    const confirmed = await resolve(bob, { resolution: 'not_executed', reason: 'the ledger agrees', resend: true });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.json()).toMatchObject({ state: 'authorized', review: { resolvedBy: 'approver:alice', resend: { requestedBy: 'approver:alice', confirmedBy: 'approver:bob' } } });
    expect((await typesOf(id)).filter((type) => type === 'ReviewResolved')).toHaveLength(2);
  });

  it('given no live session, when the page asks who is signed in, then 204 and no body (the sign-in page loads without an error), while reads still answer 401', async () => {
    const asked = await fetch(`${base}/console/api/session`);
    expect(asked.status).toBe(204);
    expect(await asked.text()).toBe('');
    expect(asked.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
    expect((await fetch(`${base}/console/api/session`, { headers: { cookie: `oncegate_console=${'A'.repeat(43)}` } })).status).toBe(204);
    const { cookie } = await signIn();
    expect((await fetch(`${base}/console/api/session`, { headers: { cookie } })).status).toBe(200);
  });

  describe('the decision history and the counts', () => {
    const held = async () => {
      const id = await acceptedPayment(store, clock, { reference: 'pay-held-0001' });
      await command(store, clock, id, (now) => ({ type: 'AuthorizeExecution', executionId: id, now, basis: 'policy' }));
      await command(store, clock, id, (now) => ({ type: 'RecordDispatch', executionId: id, now, dispatcherId: 'dispatcher-http@test' }), 'service:dispatcher-http');
      await command(store, clock, id, (now) => ({ type: 'RecordUnknownOutcome', executionId: id, now, attempt: 1, reason: 'timeout_after_send' }), 'service:dispatcher-http');
      await command(store, clock, id, (now) => ({ type: 'RequireReview', executionId: id, now, reason: 'irreversible_outcome_unknown' }), 'service:dispatcher-http');
      return id;
    };
    const get = async (cookie: string, path: string) => {
      const response = await fetch(`${base}/console/api/${path}`, { headers: { cookie } });
      return { status: response.status, text: await response.clone().text(), body: (await response.json()) as Record<string, unknown> & ErrorBody };
    };
    const resolve = (session: { cookie: string; body: { csrfToken: string } }, id: ExecutionId, body: object) =>
      fetch(`${base}/console/api/reviews/${id}/resolve`, {
        method: 'POST',
        headers: { cookie: session.cookie, 'content-type': 'application/json', [CSRF_HEADER]: session.body.csrfToken },
        body: JSON.stringify(body),
      });
    type Entry = { executionId: string; decision: string; by: string; reason: string; resend: boolean; tool: string; at: string; position: number; followed: { state: string } };

    it('given approvals granted and denied and a review resolved by two approvers, when the history is searched, then it answers the matching decisions newest first with what followed', async () => {
      const bob = await signIn((await new ApproverDirectory(cliStore).issue('bob')).token);
      const alice = await signIn();
      const granted = await paymentAwaitingApproval(store, clock);
      clock.advance(60_000);
      const denied = await paymentAwaitingApproval(store, clock);
      expect((await decide(alice.cookie, granted, 'approve', alice.body.csrfToken, { reason: 'invoice 4411 checked' })).status).toBe(200);
      clock.advance(60_000);
      const middle = clock.now().toISOString();
      expect((await decide(bob.cookie, denied, 'deny', bob.body.csrfToken, { reason: 'duplicate of invoice 4410' })).status).toBe(200);
      clock.advance(60_000);
      const reviewed = await held();
      expect((await resolve(alice, reviewed, { resolution: 'not_executed', reason: 'no charge at the processor', resend: true })).status).toBe(200);

      const all = await get(alice.cookie, 'decisions');
      expect(all.status).toBe(200);
      const entries = all.body['decisions'] as Entry[];
      expect(entries.map((entry) => [entry.executionId, entry.decision, entry.by, entry.resend])).toEqual([
        [reviewed, 'not_executed', 'approver:alice', true],
        [denied, 'denied', 'approver:bob', false],
        [granted, 'granted', 'approver:alice', false],
      ]);
      // No authorization service runs here to record the verdict of the approvals: they stay awaiting_approval.
      expect(entries.map((entry) => entry.followed.state)).toEqual(['not_executed', 'awaiting_approval', 'awaiting_approval']);
      expect(entries[0]).toMatchObject({ kind: 'review', tool: 'send_payment', actor: 'agent:billing-bot', operationClass: 'irreversible' });
      expect(all.body['next']).toBeNull();
      expect(all.text).not.toContain(CARD_TOKEN_HMAC.slice(16));

      const ids = async (query: string) => ((await get(alice.cookie, `decisions?${query}`)).body['decisions'] as Entry[]).map((entry) => entry.executionId);
      expect(await ids('by=BOB')).toEqual([denied]);
      expect(await ids('decision=granted,denied')).toEqual([denied, granted]);
      expect(await ids('decision=resend')).toEqual([reviewed]);
      expect(await ids('text=invoice')).toEqual([denied, granted]);
      expect(await ids('tool=payment&by=alice')).toEqual([reviewed, granted]);
      expect(await ids('tool=send_payout')).toEqual([]);
      expect(await ids(`from=${encodeURIComponent(middle)}`)).toEqual([reviewed, denied]);
      expect(await ids(`to=${encodeURIComponent(middle)}`)).toEqual([denied, granted]);
      expect(await ids(`execution=${granted}`)).toEqual([granted]);
    });

    it('given more decisions than a page, when the history is paged with limit and before, then each page continues where the last ended and the last says there is no more', async () => {
      const alice = await signIn();
      const decided: ExecutionId[] = [];
      for (let index = 0; index < 5; index += 1) {
        const id = await paymentAwaitingApproval(store, clock);
        expect((await decide(alice.cookie, id, index % 2 === 0 ? 'approve' : 'deny', alice.body.csrfToken)).status).toBe(200);
        decided.unshift(id);
        clock.advance(1_000);
      }
      const seen: string[] = [];
      let cursor: number | null | undefined;
      let pages = 0;
      while (cursor !== null) {
        const page = await get(alice.cookie, `decisions?limit=2${cursor === undefined ? '' : `&before=${cursor}`}`);
        expect(page.status).toBe(200);
        seen.push(...(page.body['decisions'] as Entry[]).map((entry) => entry.executionId));
        cursor = page.body['next'] as number | null;
        pages += 1;
      }
      expect(seen).toEqual(decided);
      expect(pages).toBe(3);
    });

    it('given a search that cannot be read, when it is asked, then 400 invalid_query says which parameter, and without a session or with an agent token 401 and no data', async () => {
      const id = await paymentAwaitingApproval(store, clock);
      const alice = await signIn();
      expect((await decide(alice.cookie, id, 'approve', alice.body.csrfToken)).status).toBe(200);
      for (const [query, says] of [
        ['decision=maybe', /^decision must be one or more of granted, denied, completed, not_executed, abandoned, resend$/],
        ['from=yesterday', /^from must be an ISO-8601 instant/],
        ['limit=0', /^limit must be a whole number from 1 to 100$/],
        ['before=-3', /^before must be a whole number/],
        ['execution=ex_nope', /is not an execution id/],
        ['approver=alice', /^unknown parameter 'approver'/],
      ] as const) {
        const answer = await get(alice.cookie, `decisions?${query}`);
        expect(answer.status, query).toBe(400);
        expect(answer.body.error.message, query).toMatch(says);
      }
      const agent = (await new AgentDirectory(cliStore).issue('billing-bot')).token;
      for (const headers of [{}, { authorization: `Bearer ${agent}` }, { authorization: `Bearer ${approverToken}` }]) {
        for (const path of ['decisions', 'counts']) {
          const refused = await fetch(`${base}/console/api/${path}`, { headers });
          expect(refused.status, path).toBe(401);
          expect(await refused.text()).not.toContain(id);
        }
      }
      const post = await fetch(`${base}/console/api/decisions`, { method: 'POST', headers: { cookie: alice.cookie, [CSRF_HEADER]: alice.body.csrfToken } });
      expect(post.status).toBe(405);
    });

    it('given requests waiting for approval and an execution held for review, when the counts are asked, then they say how many of each wait', async () => {
      const alice = await signIn();
      await paymentAwaitingApproval(store, clock);
      const decidedId = await paymentAwaitingApproval(store, clock);
      await paymentAwaitingApproval(store, clock);
      await held();
      expect((await decide(alice.cookie, decidedId, 'deny', alice.body.csrfToken)).status).toBe(200);
      const counts = await get(alice.cookie, 'counts');
      expect(counts.status).toBe(200);
      expect(counts.body).toMatchObject({ approvals: 2, reviews: 1, countedAt: clock.now().toISOString() });
    });

    it('given a review of an HTTP tool, when it is read, then its target is the contract\'s method and URL', async () => {
      const alice = await signIn();
      const id = await held();
      const listed = await get(alice.cookie, 'reviews');
      expect((listed.body['reviews'] as Array<{ target: unknown }>)[0]!.target).toEqual({
        name: 'demo/payments',
        method: 'POST',
        url: 'https://payments.example/payments',
        sshHost: null,
        argv: null,
        inContract: true,
      });
      expect((await get(alice.cookie, `reviews/${id}`)).body['target']).toMatchObject({ method: 'POST', url: 'https://payments.example/payments' });
    });
  });
});
