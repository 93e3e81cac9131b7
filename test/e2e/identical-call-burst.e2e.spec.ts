import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { executionEvents, executionIds } from '../support/journal';
import { connectClient } from '../support/mcp-clients';
import { executionOf, gatewayScenario, textOf } from '../support/scenario';

const ANSWERED_WITH_THE_OUTCOME = ['completed', 'completed_result_not_delivered', 'delivered'];

/**
 * A burst of identical calls: every retry attaches to the one execution while its outcome is being recorded,
 * and the outcome must still land (retries attaching never starve it).
 */
describe('gateway end to end: a burst of identical calls', () => {
  // A call waits long enough for the burst to be worked through on a loaded machine; a lost outcome still shows
  // as callers told "in progress".
  const scenario = gatewayScenario({ call_wait: '40s' });

  it('given 500 identical concurrent calls of an irreversible tool, when they race the outcome, then the target acts once and every caller is answered with that outcome', async () => {
    // Four sessions, so calls arrive on separate requests at once rather than one session's requests in a row.
    const clients = await Promise.all(Array.from({ length: 4 }, async () => (await connectClient(scenario.gateway.url, scenario.gateway.devToken)).client));
    const payment = { payment_reference: 'order-burst-0500', amount_cents: 500, card_token: 'tok_burst_000500' };
    const settled = await Promise.allSettled(
      Array.from({ length: 500 }, (_, i) => clients[i % clients.length]!.callTool({ name: 'send_payment', arguments: payment })),
    );
    await Promise.all(clients.map((client) => client.close()));

    const errors = settled.flatMap((result) => (result.status === 'rejected' ? [String((result.reason as Error).message)] : []));
    expect(errors, 'no caller gets an error').toEqual([]);
    const results = settled.map((result) => (result as PromiseFulfilledResult<Awaited<ReturnType<(typeof clients)[number]['callTool']>>>).value);
    const notAnswered = results.filter((result) => !ANSWERED_WITH_THE_OUTCOME.includes(executionOf(result).state));
    expect(notAnswered.map((result) => `${executionOf(result).state}: ${textOf(result)}`).slice(0, 3), 'callers not told the outcome').toEqual([]);
    expect(results.every((result) => result.isError === false)).toBe(true);
    expect(new Set(results.map((result) => executionOf(result).id)).size).toBe(1);

    expect((await scenario.target.effects()).byEndpoint['POST /payments']).toBe(1);
    const [executionId] = await executionIds(scenario.folder.dataDir);
    const events = await executionEvents(scenario.folder.dataDir, executionId!);
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(events.filter((type) => type === 'OutcomeObserved')).toHaveLength(1);
    expect(events.filter((type) => type === 'RetryAttached')).toHaveLength(499);
    // The arguments were sealed once: the claims of identical calls take turns, so no caller sealed a copy for a
    // claim it then lost.
    const journal = new DatabaseSync(join(scenario.folder.dataDir, 'events.db'), { readOnly: true });
    try {
      expect(journal.prepare("SELECT count(*) AS n FROM sealed_blobs WHERE kind = 'arguments'").get()).toEqual({ n: 1 });
    } finally {
      journal.close();
    }
  }, 60_000);
});
