import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { connectRevisionClient, droppableFetch, type Revision } from '../support/mcp-clients';
import { executionOf, gatewayScenario } from '../support/scenario';

const TRIALS = 8;
const IDENTICAL = 200;
/** The seed of the drop times: a failing trial is replayed by running again with the same seed. */
const SEED = Number(process.env['ONCEGATE_TRIAL_SEED'] ?? 20261201);

/** An agent calling `set_config` for one entry, on `revision`, on a connection of its own. */
async function caller(revision: Revision, url: string, token: string, fetch?: typeof globalThis.fetch) {
  const client = await connectRevisionClient(revision, url, token, fetch ? { fetch } : {});
  return { call: (name: string) => client.callTool({ name: 'set_config', arguments: { name, value: 'v' } }), close: () => client.close() };
}

describe.each(['2026-07-28', '2025-11-25'] as const)('drop and re-issue on %s (official client, real gateway process and target)', (revision) => {
  const scenario = gatewayScenario({ call_wait: '10s' });
  const requestsFor = async (name: string) => (await scenario.target.effects()).requests.filter((request) => request.path === `/config/${name}`);

  it(`given ${TRIALS} calls each cut at a random moment (seed ${SEED}), when each is made again on a new connection with a new request id, then each trial has exactly one effect, keyed by the execution that answered`, async () => {
    // Drawn as the fault campaign draws its plans (test/chaos/plan.ts): random, and the same for the same seed.
    const cuts = fc.sample(fc.integer({ min: 0, max: 40 }), { seed: SEED + (revision === '2026-07-28' ? 0 : 1), numRuns: TRIALS });
    for (let trial = 0; trial < TRIALS; trial += 1) {
      const name = `trial-${revision}-${trial}`;
      const network = droppableFetch();
      const first = await caller(revision, scenario.gateway.url, scenario.gateway.devToken, network.fetch);
      const lost = first.call(name).catch((error: unknown) => error);
      // Anywhere from before the request leaves to after the answer: a drop can land on any step.
      const cutAfterMs = cuts[trial]!;
      await new Promise((resolve) => setTimeout(resolve, cutAfterMs));
      network.dropAll();
      // Not waited for: a 2025-11-25 client whose stream was cut may keep the request open until it closes.
      void lost;
      await first.close().catch(() => undefined);

      const second = await caller(revision, scenario.gateway.url, scenario.gateway.devToken);
      const answer = executionOf(await second.call(name));
      await second.close();
      expect(['completed', 'delivered', 'completed_result_not_delivered'], `trial ${trial}, cut after ${cutAfterMs} ms`).toContain(answer.state);
      const requests = await requestsFor(name);
      expect(requests, `trial ${trial}, cut after ${cutAfterMs} ms`).toHaveLength(1);
      expect(requests[0]!.idempotencyKey, `trial ${trial}`).toBe(answer.id);
    }
    expect(new Set(cuts).size).toBeGreaterThan(1);
  }, 120_000);

  it(`given ${IDENTICAL} identical calls at once from 20 connections, then they share one execution and the target sees one request`, async () => {
    const callers = await Promise.all(Array.from({ length: 20 }, () => caller(revision, scenario.gateway.url, scenario.gateway.devToken)));
    await scenario.target.control('hold', { match: 'PUT /config/identical' });
    const calls = Array.from({ length: IDENTICAL }, (_, i) => callers[i % callers.length]!.call('identical'));
    await new Promise((resolve) => setTimeout(resolve, 500));
    await scenario.target.control('release', { match: 'PUT /config/identical' });
    const answers = (await Promise.all(calls)).map(executionOf);
    await Promise.all(callers.map((each) => each.close()));
    expect(new Set(answers.map((answer) => answer.id)).size).toBe(1);
    expect(answers.filter((answer) => !answer.attached)).toHaveLength(1);
    expect(await requestsFor('identical')).toHaveLength(1);
  }, 120_000);
});
