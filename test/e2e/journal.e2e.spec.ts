import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oncegate } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { gatewayScenario, executionOf } from '../support/scenario';


describe('the journal is evidence: sealed, exported, verified offline, investigated', () => {
  const scenario = gatewayScenario({ seal_every: '200ms' });

  /** The dropped-connection scenario: the first call's connection drops, the retry attaches. */
  async function droppedThenAttached(): Promise<string> {
    const run = { 'io.oncegate/run': 'run-investigated' };
    const args = { name: 'investigate.me', value: '1' };
    await scenario.target.control('hold', { match: 'PUT /config/:name' });
    const drop = droppableFetch();
    const first = await connectClient(scenario.gateway.url, scenario.gateway.devToken, { fetch: drop.fetch });
    const lost = first.client.callTool({ name: 'set_config', arguments: args, _meta: run }).catch((error: unknown) => error);
    await eventually(async () => ((await scenario.target.effects()).requestsTotal === 1 ? true : undefined));
    drop.dropAll();
    await first.client.close();
    await lost;
    await scenario.target.control('release', { match: 'PUT /config/:name' });
    const [executionId] = await executionIds(scenario.folder.dataDir);
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId!)).includes('ResultDeliveryFailed') ? true : undefined));
    const second = await connectClient(scenario.gateway.url, scenario.gateway.devToken);
    expect(executionOf(await second.client.callTool({ name: 'set_config', arguments: args, _meta: run })).attached).toBe(true);
    // A later request on the session is the evidence that the answer was received (a socket write is not).
    await second.client.listTools();
    await second.client.close();
    await eventually(async () => ((await executionEvents(scenario.folder.dataDir, executionId!)).includes('ResultDelivered') ? true : undefined));
    return executionId!;
  }

  // Eleven CLI processes after the scenario: each start is about a second of a loaded machine's CPU.
  it('given a stopped gateway, when its journal is exported and verified with the public key, then it verifies; an edited byte is named, and investigate and projections read the export only once it verifies', { timeout: 120_000 }, async () => {
    const executionId = await droppedThenAttached();
    await scenario.gateway.stop();
    const exported = await oncegate(scenario.folder, ['journal', 'export']);
    expect(exported.code, exported.stderr).toBe(0);
    const file = join(scenario.folder.dir, 'journal.ndjson');
    writeFileSync(file, exported.stdout);
    const publicKey = join(scenario.folder.dataDir, 'keys', 'journal-seal.pub.pem');
    const verified = await oncegate(scenario.folder, ['audit', 'verify', file, '--public-key', publicKey]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^OK: \d+ events, [1-9]\d* seals/);

    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    const index = lines.findIndex((line) => line.includes('"type":"OutcomeObserved"'));
    const edited = JSON.parse(lines[index]!) as { streamId: string; revision: number; position: number; data: { targetStatus: number } };
    edited.data.targetStatus = 500;
    lines[index] = JSON.stringify(edited);
    const tampered = join(scenario.folder.dir, 'tampered.ndjson');
    writeFileSync(tampered, `${lines.join('\n')}\n`);
    const refused = await oncegate(scenario.folder, ['audit', 'verify', tampered, '--public-key', publicKey]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('FAILED (edited)');
    expect(refused.stderr).toContain(`stream ${edited.streamId}, revision ${edited.revision}, global position ${edited.position}`);

    // An auditor holding only the export investigates from it: verified first, with the journal's public key.
    const fromStore = await oncegate(scenario.folder, ['investigate', executionId, '--json']);
    const fromExport = await oncegate(scenario.folder, ['investigate', executionId, '--json', '--journal', file, '--public-key', publicKey]);
    expect(fromExport.code, fromExport.stderr).toBe(0);
    expect(JSON.parse(fromExport.stdout)).toEqual(JSON.parse(fromStore.stdout));
    const unkeyed = await oncegate(scenario.folder, ['investigate', executionId, '--journal', file]);
    expect(unkeyed.code).toBe(2);
    expect(unkeyed.stderr).toContain('an export is verified before it is read: give --public-key');
    // A tampered export is refused before anything is read from it, by investigate and by a projection alike.
    for (const args of [['investigate', executionId], ['projection', 'run', 'fingerprint-index']]) {
      const broken = await oncegate(scenario.folder, [...args, '--journal', tampered, '--public-key', publicKey]);
      expect(broken.code, args.join(' ')).toBe(2);
      expect(broken.stderr).toContain(`${tampered} does not verify (edited)`);
      expect(broken.stdout).toBe('');
    }
    // Read anyway on the analyst's word, it is said loudly.
    const unverified = await oncegate(scenario.folder, ['investigate', executionId, '--journal', tampered, '--unverified']);
    expect(unverified.code, unverified.stderr).toBe(0);
    expect(unverified.stderr).toContain(`WARNING: ${tampered} is read WITHOUT verifying its hash chains and seals`);
    const projected = await oncegate(scenario.folder, ['projection', 'run', 'fingerprint-index', '--journal', file, '--public-key', publicKey]);
    expect(projected.code, projected.stderr).toBe(0);
    expect(JSON.parse(projected.stdout)).toHaveLength(1);
  });

  it('given the dropped-connection scenario, when investigated, then the five answers say what happened', async () => {
    const executionId = await droppedThenAttached();
    const investigated = await oncegate(scenario.folder, ['investigate', executionId, '--json']);
    expect(investigated.code, investigated.stderr).toBe(0);
    const report = JSON.parse(investigated.stdout) as {
      executions: Array<{ attempts: Array<{ attempt: number; dispatcherId: string; position: number }> }>;
      answers: {
        processes: { facts: { verdict: string; calls: number; sessions: string[]; runs: string[] } };
        firstCall: { facts: { executions: Array<{ authorized: unknown; firstDispatch: unknown }> } };
        outcome: { facts: { executions: Array<{ kind: string; outcomes: Array<{ targetStatus: number }> }> } };
        delivery: { facts: { executions: Array<{ failedAfterCompletion: boolean; deliveredAfterFailure: boolean }> } };
        secondCall: { facts: { attached: boolean; newAttempt: boolean; newExecution: boolean; idempotencyKey: boolean } };
      };
    };
    const { processes, firstCall, outcome, delivery, secondCall } = report.answers;
    // Two calls over two MCP sessions of one declared run: the client reconnected, it was not a second agent.
    expect(processes.facts.calls).toBe(2);
    expect(processes.facts.sessions).toHaveLength(2);
    expect(processes.facts.runs).toEqual(['run-investigated']);
    expect(firstCall.facts.executions[0]).toMatchObject({ authorized: expect.anything(), firstDispatch: expect.anything() });
    expect(outcome.facts.executions[0]).toMatchObject({ kind: 'completed', outcomes: [{ targetStatus: 200 }] });
    expect(delivery.facts.executions[0]).toMatchObject({ failedAfterCompletion: true, deliveredAfterFailure: true });
    expect(secondCall.facts).toMatchObject({ attached: true, newAttempt: false, newExecution: false, idempotencyKey: false });
    // The dispatcher instance that ran the attempt, in a field of its own and on a labelled line.
    const [attempt] = report.executions[0]!.attempts;
    expect(report.executions[0]!.attempts).toHaveLength(1);
    expect(attempt).toMatchObject({ attempt: 1, dispatcherId: expect.stringMatching(/^dispatcher-http@\S+$/) });
    const text = await oncegate(scenario.folder, ['investigate', executionId]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/ResultDeliveryFailed/);
    expect(text.stdout).toMatch(/RetryAttached/);
    expect(text.stdout).toContain(`\n    attempt 1  dispatcher: ${attempt!.dispatcherId}  dispatched `);
  });

  it('given a journal, when an analyst runs a built-in projection and their own module, then rows come out and the module resumes from its checkpoint', async () => {
    const executionId = await droppedThenAttached();
    const csv = join(scenario.folder.dir, 'fingerprints.csv');
    const builtin = await oncegate(scenario.folder, ['projection', 'run', 'fingerprint-index', '--out', csv]);
    expect(builtin.code, builtin.stderr).toBe(0);
    const table = readFileSync(csv, 'utf8');
    expect(table.split('\n')[0]).toMatch(/fingerprint/);
    expect(table).toContain(executionId);

    const module = join(scenario.folder.dir, 'count-types.mts');
    writeFileSync(
      module,
      `export const projection = {
        name: 'count-types',
        description: 'events per type',
        initialState: () => ({}),
        evolve: (state: Record<string, number>, event: { type: string }) => ({ ...state, [event.type]: (state[event.type] ?? 0) + 1 }),
        rows: (state: Record<string, number>) => Object.entries(state).map(([type, count]) => ({ type, count })),
      };\n`,
    );
    const first = await oncegate(scenario.folder, ['projection', 'run', module]);
    expect(first.code, first.stderr).toBe(0);
    const counts = JSON.parse(first.stdout) as Array<{ type: string; count: number }>;
    expect(counts.find((row) => row.type === 'RetryAttached')?.count).toBe(1);
    const again = await oncegate(scenario.folder, ['projection', 'run', module]);
    expect(again.code, again.stderr).toBe(0);
    // The second run resumed from the checkpoint (seals may have been added meanwhile): execution events are not counted twice.
    const resumed = JSON.parse(again.stdout) as Array<{ type: string; count: number }>;
    for (const type of ['ExecutionAccepted', 'RetryAttached', 'ResultDelivered']) {
      expect(resumed.find((row) => row.type === type)).toEqual(counts.find((row) => row.type === type));
    }
    expect(existsSync(join(scenario.folder.dataDir, 'projections', 'count-types.checkpoint.json'))).toBe(true);
    const broken = await oncegate(scenario.folder, ['projection', 'run', join(scenario.folder.dir, 'missing.ts')]);
    expect(broken.code).toBe(2);
    expect(broken.stderr).toContain('missing.ts');
  });
});
