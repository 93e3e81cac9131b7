import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oncegate, startGatewayProcess } from '../support/gateway-process';
import { eventually } from '../support/journal';
import { parseExposition } from '../support/prometheus';
import { callOnce } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

interface Listed {
  readonly executions: readonly { readonly executionId: string; readonly tool: string; readonly actor: string; readonly state: string; readonly operationClass: string }[];
  readonly nextCursor: string | null;
  readonly index: { readonly behind: number };
}

/**
 * The analyst's first question (docs/executions-search.md): "all irreversible calls of agent X in the last hour with an
 * unknown outcome", answered by one command while the gateway runs and keeps the executions index current.
 */
describe('gateway end to end: searching executions with one command', () => {
  const scenario = gatewayScenario({ operations: '{ host: 127.0.0.1, port: 0 }' });

  it('given calls of two agents, of different classes and outcomes, when the analyst asks for the irreversible calls of one agent in the last hour with an unknown outcome, then exactly those are listed', async () => {
    const other = await oncegate(scenario.folder, ['agents', 'add', 'billing']);
    expect(other.code).toBe(0);
    const billing = { url: scenario.gateway.url, devToken: other.stdout.trim() };

    // agent:dev: a payment whose outcome is lost (held for review), a payment that completes, a config write that completes.
    await scenario.target.control('hang', { match: 'POST /payments', times: 1 });
    const lost = await callOnce(scenario.gateway, 'send_payment', { payment_reference: 'search-lost-1', amount_cents: 1250, card_token: 'tok_search_000001' });
    expect(['outcome_unknown', 'needs_review']).toContain(executionOf(lost).state);
    const paid = await callOnce(scenario.gateway, 'send_payment', { payment_reference: 'search-paid-1', amount_cents: 990, card_token: 'tok_search_000002' });
    const config = await callOnce(scenario.gateway, 'set_config', { name: 'search.flag', value: 'on' });
    // agent:billing: a payment whose outcome is lost too: another agent's, so not in the answer.
    await scenario.target.control('hang', { match: 'POST /payments', times: 1 });
    const othersLost = await callOnce(billing, 'send_payment', { payment_reference: 'search-lost-2', amount_cents: 1250, card_token: 'tok_search_000003' });
    expect(['outcome_unknown', 'needs_review']).toContain(executionOf(othersLost).state);

    const question = ['executions', 'list', '--actor', 'agent:dev', '--class', 'irreversible', '--state', 'outcome_unknown,needs_review', '--since', '1h'];
    // The running gateway folds the calls into the index in the background: the answer is complete once it is current.
    const answer = await eventually(async () => {
      const run = await oncegate(scenario.folder, [...question, '--json']);
      const listed = JSON.parse(run.stdout) as Listed;
      return run.code === 0 && listed.index.behind === 0 && listed.executions.every((row) => row.state === 'needs_review') ? listed : undefined;
    }, 15_000, 'the executions index to catch up');
    expect(answer.executions).toEqual([expect.objectContaining({ executionId: executionOf(lost).id, tool: 'send_payment', actor: 'agent:dev', operationClass: 'irreversible', state: 'needs_review' })]);
    expect(answer.nextCursor).toBeNull();

    const table = await oncegate(scenario.folder, question);
    expect(table.code).toBe(0);
    const lines = table.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(executionOf(lost).id);
    expect(table.stdout).not.toContain(executionOf(paid).id);
    expect(table.stdout).not.toContain(executionOf(config).id);
    expect(table.stdout).not.toContain(executionOf(othersLost).id);

    const everything = JSON.parse((await oncegate(scenario.folder, ['executions', 'list', '--since', '1h', '--json'])).stdout) as Listed;
    expect(everything.executions).toHaveLength(4);

    // The same question over HTTP, on the running gateway's listener, with an approver's token; an agent's is refused.
    const approver = (await oncegate(scenario.folder, ['approvers', 'add', 'analyst'])).stdout.trim();
    const search = `${new URL(scenario.gateway.url).origin}/executions?actor=agent:dev&class=irreversible&state=outcome_unknown,needs_review&since=1h`;
    const overHttp = await eventually(async () => {
      const response = await fetch(search, { headers: { authorization: `Bearer ${approver}` } });
      return response.status === 200 ? ((await response.json()) as Listed) : undefined;
    }, 10_000, 'the approver token to be known');
    expect(overHttp.executions.map((row) => row.executionId)).toEqual([executionOf(lost).id]);
    expect((await fetch(search, { headers: { authorization: `Bearer ${scenario.gateway.devToken}` } })).status).toBe(401);

    // An operator sees how far behind the journal the index is at /metrics: 0 once it has folded what was committed.
    const operations = /operations:\s+(\S+)/.exec(scenario.gateway.output())![1]!;
    const behind = await eventually(async () => {
      const samples = await parseExposition(await (await fetch(new URL('/metrics', operations))).text());
      const value = samples.find((sample) => sample.family === 'oncegate_executions_index_behind_events')?.value;
      return value === 0 ? value : undefined;
    }, 15_000, 'the index gauge at 0');
    expect(behind).toBe(0);
  });

  it('given a damaged index file, when the gateway starts, then it serves tool calls, a search answers 503, and once the file is deleted the index is folded again', async () => {
    await scenario.gateway.stop();
    const file = join(scenario.folder.dataDir, 'executions-index.db');
    writeFileSync(file, 'not a database, and not a secret either\n'.repeat(200));
    scenario.gateway = await startGatewayProcess(scenario.folder);
    const config = await callOnce(scenario.gateway, 'set_config', { name: 'search.damaged', value: 'on' });
    expect(config.isError).toBe(false);
    const approver = (await oncegate(scenario.folder, ['approvers', 'add', 'analyst'])).stdout.trim();
    const search = `${new URL(scenario.gateway.url).origin}/executions`;
    const refused = await eventually(async () => {
      const response = await fetch(search, { headers: { authorization: `Bearer ${approver}` } });
      return response.status === 401 ? undefined : response;
    }, 10_000, 'the approver token to be known');
    expect(refused.status).toBe(503);

    await scenario.gateway.stop();
    rmSync(file, { force: true });
    scenario.gateway = await startGatewayProcess(scenario.folder);
    const listed = await eventually(async () => {
      const response = await fetch(search, { headers: { authorization: `Bearer ${approver}` } });
      const body = response.status === 200 ? ((await response.json()) as Listed) : undefined;
      return body !== undefined && body.executions.length > 0 ? body : undefined;
    }, 15_000, 'the index to be folded again');
    expect(listed.executions.map((row) => row.executionId)).toEqual([executionOf(config).id]);
  });
});
