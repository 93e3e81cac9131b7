import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mcpContractTools, startUpstreamProcess, stdioUpstreamCommand, UpstreamFolder, type McpContractTool, type UpstreamProcess } from '@oncegate/service-dispatcher-mcp/testing';
import { CREDENTIAL_CANARY, gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { readJournal } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { executionOf, textOf } from '../support/scenario';

const TRIALS = 4;
const IDENTICAL = 200;
/** The seed of the drop times: a failing trial is replayed by running again with the same seed. */
const SEED = Number(process.env['ONCEGATE_TRIAL_SEED'] ?? 20261204);
const SETTLED = ['completed', 'delivered', 'completed_result_not_delivered'];

/**
 * An upstream MCP server behind `oncegate start` on the mcp channel: the gateway's own process, the official MCP client
 * as the agent, and the test upstream (the official SDK server) as a process of its own over Streamable HTTP, or as a
 * child the channel starts over stdio. Its tools name it in the contract file, with the digests of its definitions.
 */
describe.each(['http', 'stdio'] as const)('the mcp channel end to end, upstream over %s (oncegate start, official client and server)', (transport) => {
  let dir: string;
  let upstreamFolder: UpstreamFolder;
  let upstream: UpstreamProcess | undefined;
  let folder: GatewayFolder;
  let gateway: GatewayProcess;

  const agent = async (fetch?: typeof globalThis.fetch) => (await connectClient(gateway.url, gateway.devToken, fetch === undefined ? {} : { fetch })).client;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `oncegate-mcp-e2e-${transport}-`));
    upstreamFolder = new UpstreamFolder(dir);
    // The upstream's bearer token is the canary the gateway's vault holds: it must show nowhere else.
    upstream = transport === 'http' ? await startUpstreamProcess({ dir, token: CREDENTIAL_CANARY }) : undefined;
    const reach = upstream !== undefined ? { url: upstream.url } : { command: stdioUpstreamCommand(dir) };
    const credential = upstream !== undefined ? { credentialRef: 'ledger-token' } : {};
    const common = { upstream: 'ledger', reach, limits: '{ connect_timeout: 15s, response_timeout: 5s }', ...credential };
    const tools: McpContractTool[] = [
      { ...common, name: 'ledger_set_limit', upstreamTool: 'set_limit', operationClass: 'idempotent_write' },
      { ...common, name: 'ledger_send_payment', upstreamTool: 'send_payment', operationClass: 'irreversible' },
      { ...common, name: 'ledger_read_balance', upstreamTool: 'read_balance', operationClass: 'read_only' },
      // Written against a definition of set_limit the upstream no longer has: held, never sent.
      { ...common, name: 'ledger_set_limit_as_it_was', upstreamTool: 'set_limit', operationClass: 'idempotent_write', variant: 'changed' },
      ...(upstream !== undefined ? [{ ...common, name: 'ledger_echo_credential', upstreamTool: 'echo_credential', operationClass: 'read_only' as const }] : []),
    ];
    folder = await gatewayFolder('http://127.0.0.1:9', {}, upstream !== undefined ? [{ ref: 'ledger-token', kind: 'password', bind: [`127.0.0.1:${upstream.port}`] }] : []);
    appendFileSync(join(folder.dir, 'tools.yaml'), `${mcpContractTools(tools)}\n`);
    gateway = await startGatewayProcess(folder);
  }, 120_000);

  afterAll(async () => {
    await gateway?.stop();
    await upstream?.stop();
    folder?.dispose();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it(`given ${TRIALS} calls of each write cut at a random moment (seed ${SEED}), when each is made again on a new connection, then each has exactly one effect at the upstream, under the execution that answered`, async () => {
    // Each call waits a little at the upstream, so that a cut can land while it is there.
    upstreamFolder.delayMs = 40;
    const cuts = fc.sample(fc.integer({ min: 0, max: 80 }), { seed: SEED + (transport === 'http' ? 0 : 1), numRuns: TRIALS * 2 });
    const calls = [
      ...Array.from({ length: TRIALS }, (_, trial) => ({ tool: 'set_limit', args: { account: `trial-${transport}-${trial}`, cents: 100 + trial }, key: 'account' })),
      ...Array.from({ length: TRIALS }, (_, trial) => ({ tool: 'send_payment', args: { to: `trial-${transport}-${trial}`, cents: 500 + trial }, key: 'to' })),
    ];
    for (const [index, { tool, args, key }] of calls.entries()) {
      const network = droppableFetch();
      const first = await agent(network.fetch);
      const lost = first.callTool({ name: `ledger_${tool}`, arguments: args }).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, cuts[index]!));
      network.dropAll();
      void lost;
      await first.close().catch(() => undefined);

      const second = await agent();
      const answer = executionOf(await second.callTool({ name: `ledger_${tool}`, arguments: args }));
      await second.close();
      const what = `${tool} ${JSON.stringify(args)}, cut after ${cuts[index]} ms`;
      expect(SETTLED, what).toContain(answer.state);
      const effects = upstreamFolder.effectsOf(tool).filter((effect) => effect.args[key] === args[key as keyof typeof args]);
      expect(effects, what).toHaveLength(1);
      expect(effects[0]!.executionId, what).toBe(answer.id);
    }
    upstreamFolder.delayMs = 0;
  }, 180_000);

  it(`given ${IDENTICAL} identical calls of each write at once from 20 connections, then they share one execution and the upstream takes effect once`, async () => {
    upstreamFolder.delayMs = 300;
    const agents = await Promise.all(Array.from({ length: 20 }, () => agent()));
    for (const [tool, args, key] of [
      ['set_limit', { account: `race-${transport}`, cents: 700 }, 'account'],
      ['send_payment', { to: `race-${transport}`, cents: 900 }, 'to'],
    ] as const) {
      const answers = (await Promise.all(Array.from({ length: IDENTICAL }, (_, i) => agents[i % agents.length]!.callTool({ name: `ledger_${tool}`, arguments: args })))).map(executionOf);
      expect(new Set(answers.map((answer) => answer.id)).size, tool).toBe(1);
      expect(answers.filter((answer) => !answer.attached), tool).toHaveLength(1);
      expect(upstreamFolder.effectsOf(tool).filter((effect) => effect.args[key] === (args as Record<string, unknown>)[key]), tool).toHaveLength(1);
    }
    await Promise.all(agents.map((each) => each.close()));
    upstreamFolder.delayMs = 0;
  }, 180_000);

  it("given a tool whose upstream definition changed since its contract was written, then the agent is told it was not sent, why, and how to look; the upstream sees nothing", async () => {
    const client = await agent();
    const answer = await client.callTool({ name: 'ledger_set_limit_as_it_was', arguments: { account: `stale-${transport}`, cents: 1, currency: 'EUR' } });
    await client.close();

    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toMatch(/^ledger_set_limit_as_it_was failed: nothing was sent \(tool set_limit of upstream ledger changed since the contract was written .*ledger_set_limit_as_it_was is held, nothing was sent \(oncegate upstream diff ledger\)\)/);
    expect(executionOf(answer).state).toBe('failed');
    expect(upstreamFolder.entries().filter((entry) => entry.args['account'] === `stale-${transport}`)).toEqual([]);
  });

  it("given a read that answers with structured content, then the agent gets it as the answer's structured response", async () => {
    const client = await agent();
    const answer = await client.callTool({ name: 'ledger_read_balance', arguments: { account: `read-${transport}` } });
    await client.close();

    expect(answer.isError ?? false).toBe(false);
    expect((answer.structuredContent as { response?: unknown }).response).toEqual({ account: `read-${transport}`, cents: 10_000 });
  });

  it('given a write the upstream works on for a while, reporting its steps, when the agent asked for progress, then it hears them through the gateway, the journal keeps them as AttemptProgressed, and no piece of the credential the upstream quoted shows', async () => {
    upstreamFolder.delayMs = 2_400;
    const heard: Array<{ progress: number; message?: string }> = [];
    const client = await agent();
    const answer = await client.callTool({ name: 'ledger_set_limit', arguments: { account: `progress-${transport}`, cents: 42 } }, undefined, {
      onprogress: (update) => void heard.push(update),
      timeout: 30_000,
    });
    await client.close();
    upstreamFolder.delayMs = 0;

    const execution = executionOf(answer);
    expect(SETTLED).toContain(execution.state);
    const told = heard.map((update) => update.message ?? '').filter((message) => message.includes('the target reports'));
    expect(told.length).toBeGreaterThanOrEqual(1);
    for (const message of told) expect(message).toMatch(new RegExp(`^execution ${execution.id}: dispatched \\(attempt 1\\), the target reports [1-4] of 4: set_limit: step [1-4] of 4 \\(as `));
    // Counted up by the gateway, one notification per thing it had to say.
    expect(heard.map((update) => update.progress)).toEqual(heard.map((_, index) => index + 1));
    const stream = await readJournal(folder.journal, [`execution-${execution.id}`]);
    const progressed = stream.filter((event) => event.type === 'AttemptProgressed').map((event) => event.data as { attempt: number; progress: number; total: number; message: string });
    // The first step at once, then at most one a second over the 2.4 s the upstream worked.
    expect(progressed.length).toBeGreaterThanOrEqual(1);
    expect(progressed.length).toBeLessThanOrEqual(4);
    expect(progressed.map((event) => event.progress)).toEqual([...progressed.map((event) => event.progress)].sort());
    expect(progressed[0]).toMatchObject({ attempt: 1, total: 4, message: expect.stringMatching(/^set_limit: step \d of 4 \(as /) });
    const types = stream.map((event) => event.type);
    expect(types.lastIndexOf('AttemptProgressed')).toBeLessThan(types.indexOf('OutcomeObserved'));
    if (transport === 'http') expect(progressed[0]!.message).toMatch(/\(as Bearer \S+\)$/);
    const seen = JSON.stringify({ heard, progressed });
    for (let length = 6; length <= CREDENTIAL_CANARY.length; length += 1) {
      expect(seen, `${length} characters of the credential`).not.toContain(CREDENTIAL_CANARY.slice(0, length));
    }
  }, 60_000);

  it('given an upstream that echoes the bearer token, then neither the answer, the journal nor the log holds the credential or a piece of it', async (context) => {
    if (transport === 'stdio') context.skip('a stdio upstream is given no vault credential: its tools name none');
    const client = await agent();
    const answer = await client.callTool({ name: 'ledger_echo_credential', arguments: { n: 1 } });
    await client.close();
    const echoed = JSON.stringify(answer);
    expect(echoed).toContain('the upstream was given: Bearer');
    const journal = JSON.stringify(await readJournal(folder.journal));
    const logs = gateway.output();
    for (let length = 6; length <= CREDENTIAL_CANARY.length; length += 1) {
      const piece = CREDENTIAL_CANARY.slice(0, length);
      expect(echoed, `the answer holds ${length} characters of the credential`).not.toContain(piece);
      expect(journal, `the journal holds ${length} characters of the credential`).not.toContain(piece);
      expect(logs, `the log holds ${length} characters of the credential`).not.toContain(piece);
    }
  });
});
