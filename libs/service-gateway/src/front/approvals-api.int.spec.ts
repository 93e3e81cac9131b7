import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { executionIdFromUlid, executionStream, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { newUlid } from '@oncegate/execution-journal';
import type { ApprovalView, PendingApproval } from '@oncegate/host-decisions';
import { approvalTools, deniedOnTimeout, ManualClock, paymentAwaitingApproval, retryAttached } from '@oncegate/host-decisions/testing';
import { AgentDirectory, ApproverDirectory } from '@oncegate/host-principals';
import { APPROVALS_PATH, ApprovalsApi } from './approvals-api';
import { apiFront } from './api-front-fixture';
import type { McpHttpFront } from './mcp-http-front';

/** Reasons are not secret and are recorded; the canary proves the byte search below can find what is there. */
/** A request with headers fetch would not let a test set (`Host`). */
function rawRequest(base: string, method: string, path: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, base), { method, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const REASON_CANARY = 'reason-canary-5e0c1d: invoice 4411 checked by phone';

interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly state?: string };
}

describe('the approvals HTTP API on the MCP front (SQLite event store, real fetch)', () => {
  let dir: string;
  let store: EventStore;
  /** What the `oncegate` CLI would use: its own connection to the same journal file. */
  let cliStore: EventStore;
  let front: McpHttpFront;
  let watch: { stop(): Promise<void> };
  let base: string;
  let clock: ManualClock;
  let approverToken: string;
  let agentToken: string;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-approvals-api-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    cliStore = openSqliteEventStore({ file: join(dir, 'events.db') });
    clock = new ManualClock(new Date().toISOString());
    const approvers = new ApproverDirectory(store);
    const tools = approvalTools('https://payments.example');
    front = apiFront({ store, tools, clock, mounted: [new ApprovalsApi({ store, approvers, tools, clock })] });
    const { url } = await front.listen();
    base = new URL(url).origin;
    approverToken = (await new ApproverDirectory(cliStore).issue('alice')).token;
    agentToken = (await new AgentDirectory(cliStore).issue('billing-bot')).token;
    await approvers.refresh();
    watch = approvers.watch();
  });

  afterEach(async () => {
    await watch.stop();
    await front.close();
    await cliStore.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `null`: no Authorization header at all. */
  const get = (path: string, token: string | null = approverToken) =>
    fetch(`${base}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
  const post = (path: string, body: string, token: string | null = approverToken) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
      body,
    });
  const decision = (id: string, action: 'approve' | 'deny', reason: unknown, token: string | null = approverToken) =>
    post(`${APPROVALS_PATH}/${id}/${action}`, JSON.stringify({ reason }), token);
  const typesOf = async (id: ExecutionId) => (await store.readStream(executionStream(id))).map((event) => event.type);
  const errorOf = async (response: Response) => ((await response.json()) as ErrorBody).error;

  it('given a foreign Host or Origin (DNS rebinding), when an approver decides with a valid token, then 403 and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const port = new URL(base).port;
    const body = JSON.stringify({ reason: 'looks fine' });
    const send = (headers: Record<string, string>) =>
      rawRequest(base, 'POST', `${APPROVALS_PATH}/${id}/approve`, { authorization: `Bearer ${approverToken}`, 'content-type': 'application/json', ...headers }, body);

    const foreignHost = await send({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` });
    const foreignOrigin = await send({ origin: 'http://evil.example' });
    expect(foreignHost.status).toBe(403);
    expect(foreignHost.body).toMatch(/Host 'evil\.example:\d+' is not a name this gateway answers to/);
    expect(foreignOrigin.status).toBe(403);
    expect(foreignOrigin.body).toMatch(/Origin 'http:\/\/evil\.example' is not allowed/);
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);

    const sameOrigin = await send({ origin: base });
    expect(sameOrigin.status).toBe(200);
  });

  it('given a pending request with a retry attached, when an approver lists and shows it, then 200 with the queue and the full view', async () => {
    const id = await paymentAwaitingApproval(store, clock, { scope: 'run' });
    await retryAttached(store, clock, id, 2);

    const listed = await get(APPROVALS_PATH);
    expect(listed.status).toBe(200);
    expect(listed.headers.get('content-type')).toBe('application/json');
    const { approvals } = (await listed.json()) as { approvals: PendingApproval[] };
    expect(approvals).toEqual([expect.objectContaining({ executionId: id, tool: 'send_payment', scope: 'run', retriesAttached: 1 })]);

    const shown = await get(`${APPROVALS_PATH}/${id}`);
    expect(shown.status).toBe(200);
    const view = (await shown.json()) as ApprovalView;
    expect(view).toMatchObject({
      executionId: id,
      summary: 'pending',
      target: { name: 'demo/payments', method: 'POST', url: 'https://payments.example/payments' },
      approval: { scope: 'run', decision: 'pending' },
    });
    expect(view.attachedCalls).toHaveLength(1);
  });

  it('given a pending request, when an approver approves it, then 200 with the granted view and one ApprovalGranted by approver:<name>', async () => {
    const id = await paymentAwaitingApproval(store, clock);

    const response = await decision(id, 'approve', REASON_CANARY);

    expect(response.status).toBe(200);
    const view = (await response.json()) as ApprovalView;
    expect(view.approval).toMatchObject({ decision: 'granted', decidedBy: 'approver:alice', decisionReason: REASON_CANARY });
    const events = await store.readStream(executionStream(id));
    expect(events.map((event) => event.type)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);
    expect(events[2]!.data).toMatchObject({ by: 'approver:alice', reason: REASON_CANARY });
    expect(events[2]!.metadata['actor']).toBe('approver:alice');
  });

  it('given a pending request, when an approver denies it, then 200 and one ApprovalDenied', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const response = await decision(id, 'deny', 'card looks stolen');
    expect(response.status).toBe(200);
    expect(((await response.json()) as ApprovalView).approval.decision).toBe('denied');
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalDenied']);
  });

  it('given a decided or timed-out request, when decided again, then 409 naming its state and nothing is appended', async () => {
    const granted = await paymentAwaitingApproval(store, clock);
    expect((await decision(granted, 'approve', 'ok')).status).toBe(200);
    const again = await decision(granted, 'deny', 'changed my mind');
    expect(again.status).toBe(409);
    const conflict = await errorOf(again);
    expect(conflict.code).toBe('not_pending');
    expect(conflict.state).toBe('awaiting_approval');
    expect(conflict.message).toMatch(/^execution ex_\S+ is not awaiting approval: already granted by approver:alice at \S+$/);
    expect(await typesOf(granted)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ApprovalGranted']);

    const timedOut = await paymentAwaitingApproval(store, clock, { expiresInMs: 60_000 });
    clock.advance(60_000);
    await deniedOnTimeout(store, clock, timedOut);
    const late = await decision(timedOut, 'approve', 'sorry, late');
    expect(late.status).toBe(409);
    const lateError = await errorOf(late);
    expect(lateError.state).toBe('denied');
    expect(lateError.message).toMatch(/already denied: approval_timeout at /);
    expect(await typesOf(timedOut)).toEqual(['ExecutionAccepted', 'ApprovalRequested', 'ExecutionDenied']);
  });

  it('given bad requests, when sent, then 400, 404, 405 and 413 with JSON errors, and nothing is appended', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    const path = `${APPROVALS_PATH}/${id}/approve`;

    const malformed = await post(path, '{"reason": ');
    expect([malformed.status, (await errorOf(malformed)).code]).toEqual([400, 'invalid_json']);
    const missing = await post(path, '{"why": "because"}');
    expect([missing.status, (await errorOf(missing)).code]).toEqual([400, 'invalid_reason']);
    const blank = await decision(id, 'approve', '   ');
    expect([blank.status, (await errorOf(blank)).code]).toEqual([400, 'invalid_reason']);
    const long = await decision(id, 'approve', 'x'.repeat(1001));
    expect(long.status).toBe(400);
    expect((await errorOf(long)).message).toBe('reason: at most 1000 characters (got 1001)');
    const badId = await decision('ex_not-an-id', 'approve', 'ok');
    expect([badId.status, (await errorOf(badId)).code]).toEqual([400, 'invalid_execution_id']);

    const unknown = executionIdFromUlid(newUlid());
    const notFound = await decision(unknown, 'approve', 'ok');
    expect(notFound.status).toBe(404);
    expect(await errorOf(notFound)).toEqual({ code: 'not_found', message: `no execution ${unknown} in this journal` });
    expect((await get(`${APPROVALS_PATH}/${unknown}`)).status).toBe(404);
    expect((await post(`${APPROVALS_PATH}/${id}/escalate`, '{"reason":"x"}')).status).toBe(404);

    const wrongMethod = await get(path);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get('allow')).toBe('POST');

    const huge = await post(path, JSON.stringify({ reason: 'ok', padding: 'x'.repeat(20 * 1024) }));
    expect(huge.status).toBe(413);
    expect(await errorOf(huge)).toEqual({ code: 'too_large', message: 'the request body exceeds 16384 bytes; nothing was recorded' });

    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);
  });

  it('given no token, an agent token or a revoked approver token, when deciding, then 401 and nothing is appended; an approver token never reaches MCP', async () => {
    const id = await paymentAwaitingApproval(store, clock);

    const none = await decision(id, 'approve', 'ok', null);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer /);
    expect((await errorOf(none)).code).toBe('unauthorized');

    const agent = await decision(id, 'approve', 'ok', agentToken);
    expect(agent.status).toBe(401);
    expect((await errorOf(agent)).message).toMatch(/not an approver token/);
    expect((await get(APPROVALS_PATH, agentToken)).status).toBe(401);

    const mcp = await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${approverToken}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    expect(mcp.status).toBe(401);

    expect((await get(APPROVALS_PATH)).status).toBe(200);
    // Revoked by the CLI through its own connection: the front follows the journal and refuses from then on.
    expect(await new ApproverDirectory(cliStore).revoke('alice')).toBe(1);
    await vi.waitFor(
      async () => {
        const response = await get(APPROVALS_PATH);
        await response.body?.cancel();
        expect(response.status).toBe(401);
      },
      { timeout: 2_000, interval: 50 },
    );
    const revoked = await decision(id, 'approve', 'ok');
    expect(revoked.status).toBe(401);
    expect((await errorOf(revoked)).message).toBe('unknown or revoked approver token');
    expect(await typesOf(id)).toEqual(['ExecutionAccepted', 'ApprovalRequested']);
  });

  it('given decisions made over HTTP, when the journal file is read, then the reason is there and no token is', async () => {
    const id = await paymentAwaitingApproval(store, clock);
    expect((await decision(id, 'approve', REASON_CANARY)).status).toBe(200);
    expect((await decision(id, 'approve', 'again', agentToken)).status).toBe(401);
    await watch.stop();
    await front.close();
    await cliStore.close();
    await store.close();
    const bytes = readdirSync(dir)
      .filter((file) => file.startsWith('events.db'))
      .map((file) => readFileSync(join(dir, file)).toString('latin1'))
      .join('');
    expect(bytes).toContain(REASON_CANARY);
    expect(bytes).not.toContain(approverToken);
    expect(bytes).not.toContain(agentToken);
    // Closed twice is harmless; reopen what afterEach closes.
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    cliStore = openSqliteEventStore({ file: join(dir, 'events.db') });
    watch = { stop: async () => undefined };
  });
});
