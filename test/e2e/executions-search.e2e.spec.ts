import { describe, expect, it } from 'vitest';
import { oncegate } from '../support/gateway-process';
import { eventually } from '../support/journal';
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
  const scenario = gatewayScenario();

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
  });
});
