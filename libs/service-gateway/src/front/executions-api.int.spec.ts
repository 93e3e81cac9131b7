import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ErrorAnswer, ExecutionsAnswer } from '@oncegate/console-api';
import { acceptExecution, authorize, dispatch, requireReview, unknownOutcome } from '@oncegate/domain/testing';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { ExecutionsIndex, SqliteIndexTables } from '@oncegate/executions-index';
import { appendHistory, executionIdOf, historyFor } from '@oncegate/executions-index/testing';
import { AgentDirectory, ApproverDirectory } from '@oncegate/host-principals';
import { apiFront } from './api-front-fixture';
import { ConsoleApi } from './console-api';
import { EXECUTIONS_PATH, ExecutionsApi } from './executions-api';
import type { McpHttpFront } from './mcp-http-front';

const payment = (actor: string) =>
  acceptExecution({ operationClass: 'irreversible', redeliveryGraceMs: null, now: new Date().toISOString(), record: { ...acceptExecution().record, actor, tool: 'send_payment' } });

describe('searching executions over HTTP: GET /executions and GET /console/api/executions (SQLite store and index, real fetch)', () => {
  let dir: string;
  let store: EventStore;
  let tables: SqliteIndexTables;
  let index: ExecutionsIndex;
  let front: McpHttpFront;
  let base: string;
  let approverToken: string;
  let agentToken: string;
  let watch: { stop(): Promise<void> };

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'oncegate-executions-api-'));
    store = openSqliteEventStore({ file: join(dir, 'events.db') });
    tables = new SqliteIndexTables({ file: join(dir, 'executions-index.db') });
    index = new ExecutionsIndex({ store, tables, owner: 'test' });
    const clock = { now: () => new Date() };
    const approvers = new ApproverDirectory(store);
    front = apiFront({
      store,
      tools: new Map(),
      clock,
      mounted: [new ExecutionsApi({ index, approvers, clock }), new ConsoleApi({ store, approvers, tools: new Map(), clock, assetsDir: dir, executions: index })],
    });
    base = new URL((await front.listen()).url).origin;
    approverToken = (await approvers.issue('alice')).token;
    agentToken = (await new AgentDirectory(store).issue('payments')).token;
    await approvers.refresh();
    watch = approvers.watch();
    for (const [n, actor] of [[1, 'agent:payments'], [2, 'agent:payments'], [3, 'agent:other']] as const) {
      const id = executionIdOf(n);
      await appendHistory(store, id, historyFor(id, payment(actor), authorize(), dispatch(), unknownOutcome(), requireReview()));
    }
    await index.catchUp();
  });

  afterEach(async () => {
    await watch.stop();
    await front.close();
    await index.stop();
    await tables.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const get = (path: string, token: string | null) => fetch(`${base}${path}`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });

  it('given an approver token, the analyst\'s question is answered as JSON, newest first, with the next page\'s cursor and the index\'s lag', async () => {
    const response = await get(`${EXECUTIONS_PATH}?actor=agent:payments&class=irreversible&state=outcome_unknown,needs_review&since=1h&limit=1`, approverToken);
    expect(response.status).toBe(200);
    const first = (await response.json()) as ExecutionsAnswer;
    expect(first.executions.map((row) => row.executionId)).toEqual([executionIdOf(2)]);
    expect(first.index).toEqual({ position: expect.any(Number), head: expect.any(Number), behind: 0 });
    const second = (await (await get(`${EXECUTIONS_PATH}?actor=agent:payments&class=irreversible&state=needs_review&since=1h&limit=1&cursor=${first.nextCursor}`, approverToken)).json()) as ExecutionsAnswer;
    expect(second.executions.map((row) => row.executionId)).toEqual([executionIdOf(1)]);
    expect(second.nextCursor).toBeNull();
  });

  it('given an agent token or no token, the search is refused with 401 and no rows', async () => {
    for (const token of [agentToken, null, 'og_not-a-token']) {
      const response = await get(`${EXECUTIONS_PATH}?state=needs_review`, token);
      expect(response.status).toBe(401);
      const body = await response.text();
      expect(body).not.toContain('ex_');
      expect((JSON.parse(body) as ErrorAnswer).error.code).toBe('unauthorized');
    }
  });

  it('given a state the domain does not name, 400 invalid_query names the closest one', async () => {
    const response = await get(`${EXECUTIONS_PATH}?state=outcome_unknwn`, approverToken);
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({ error: { code: 'invalid_query', message: expect.stringContaining("did you mean 'outcome_unknown'?") } });
    expect((await fetch(`${base}${EXECUTIONS_PATH}`, { method: 'POST', headers: { authorization: `Bearer ${approverToken}` } })).status).toBe(405);
  });

  it('given a console session, the same query answers under /console/api/executions; without one, 401', async () => {
    const signIn = await fetch(`${base}/console/api/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: approverToken }) });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0]!;
    const answer = await fetch(`${base}/console/api/executions?actor=agent:other`, { headers: { cookie } });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as ExecutionsAnswer).executions.map((row) => [row.executionId, row.state])).toEqual([[executionIdOf(3), 'needs_review']]);
    expect((await fetch(`${base}/console/api/executions?state=nope`, { headers: { cookie } })).status).toBe(400);
    expect((await fetch(`${base}/console/api/executions`)).status).toBe(401);
  });
});
