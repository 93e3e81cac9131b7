import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DispatcherWorld, type WorldCredential } from '@oncegate/dispatcher-kit/host-testing';
import { mcpKit } from './mcp-channel';
import { alive, mcpContract, startHttpUpstream, stdioUpstreamCommand, UpstreamFolder, type HttpUpstream, type HttpUpstreamOptions, type McpContractTool, type UpstreamReach } from './testing';

const TOKEN = 'mcp-channel-token-83c1f2a9e4';

/** The contract's tools in front of the test upstream's set_limit, read_balance and send_payment. */
function tools(reach: UpstreamReach, credentialRef?: string): McpContractTool[] {
  const common = { upstream: 'ledger', reach, ...(credentialRef === undefined ? {} : { credentialRef }) };
  return [
    { ...common, name: 'set_limit', upstreamTool: 'set_limit', operationClass: 'idempotent_write' },
    { ...common, name: 'read_balance', upstreamTool: 'read_balance', operationClass: 'read_only' },
    { ...common, name: 'send_payment', upstreamTool: 'send_payment', operationClass: 'irreversible' },
  ];
}

interface Opened {
  readonly world: DispatcherWorld;
  readonly folder: UpstreamFolder;
  readonly upstream?: HttpUpstream;
  /** Closes the world, and the drivers it opened (once). */
  closeWorld(): Promise<void>;
  /** Calls `tool` on a dispatcher of the world; the execution's last OutcomeObserved and its sealed body. */
  call(tool: string, args: Record<string, unknown>): Promise<{ executionId: string; observed: { outcome?: string; source?: string; notSentReason?: string; attempt?: number }; body: string | undefined }>;
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A world whose contract reaches the test upstream over HTTP (started here) or stdio (started by the channel). */
async function open(how: { http: Omit<HttpUpstreamOptions, 'dir'> } | { stdio: 'both' | 'legacy' }, credential?: Partial<WorldCredential>): Promise<Opened> {
  const dir = mkdtempSync(join(tmpdir(), 'oncegate-mcp-channel-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const folder = new UpstreamFolder(dir);
  let upstream: HttpUpstream | undefined;
  let reach: UpstreamReach;
  if ('http' in how) {
    upstream = await startHttpUpstream({ dir, ...how.http });
    const started = upstream;
    cleanups.push(() => started.close());
    reach = { url: upstream.url };
  } else reach = { command: stdioUpstreamCommand(dir, how.stdio) };
  const withCredential = upstream !== undefined && credential !== undefined;
  const world = await DispatcherWorld.open({
    kit: mcpKit,
    contract: mcpContract(tools(reach, withCredential ? 'ledger-token' : undefined)),
    ...(withCredential ? { credential: { ref: 'ledger-token', kind: 'password', bindings: [`127.0.0.1:${upstream!.port}`], value: TOKEN, ...credential } } : {}),
  });
  let closed = false;
  const closeWorld = async () => {
    if (closed) return;
    closed = true;
    await world.close();
  };
  cleanups.push(closeWorld);
  const { dispatcher } = await world.dispatcher();
  return {
    world,
    folder,
    ...(upstream === undefined ? {} : { upstream }),
    closeWorld,
    async call(tool, args) {
      const { executionId } = await world.call(tool, args);
      await world.dispatch(executionId, dispatcher);
      const observed = ((await world.last(executionId, 'OutcomeObserved'))?.data ?? {}) as { outcome?: string; source?: string; notSentReason?: string; attempt?: number };
      return { executionId, observed, body: await world.resultBody(executionId) };
    },
  };
}

async function until(what: string, condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('the mcp channel, driven by its dispatcher on a real journal', () => {
  it('given a call, then the upstream gets the execution id and the attempt number in _meta, under the credential of the vault', async () => {
    const { call, folder, world } = await open({ http: { token: TOKEN } }, {});

    const { executionId, observed, body } = await call('set_limit', { account: 'acct-1', cents: 300 });

    expect(observed).toMatchObject({ outcome: 'succeeded', source: 'response', attempt: 1 });
    expect(body).toBe('the limit of acct-1 is now 300 cents');
    expect(folder.entries()).toEqual([expect.objectContaining({ tool: 'set_limit', executionId, attempt: 1, effect: true })]);
    expect(world.logs.join('\n')).toMatch(/upstream ledger \(http:\/\/127\.0\.0\.1:\d+\/mcp\) opened for a call \(2026-07-28\): 4 tools listed/);
  });

  it('given an upstream that refuses the credential, then nothing is sent, and neither the reason nor the log holds the credential', async () => {
    const { call, folder, world } = await open({ http: { token: TOKEN } }, { value: 'not-the-upstream-token-51d0' });

    const { observed } = await call('send_payment', { to: 'acct-2', cents: 700 });

    expect(observed).toMatchObject({ outcome: 'failed', source: 'not_sent' });
    expect(observed.notSentReason).toMatch(/^could not open upstream ledger \(http:\/\/127\.0\.0\.1:\d+\/mcp\): .*401/);
    expect(observed.notSentReason).not.toContain('not-the-upstream');
    const logs = world.logs.join('\n');
    expect(logs).toContain('could not open upstream ledger');
    expect(logs).not.toContain('not-the-upstream');
    expect(folder.entries()).toEqual([]);
  });

  it('given an upstream that stops taking the credential once connected and quotes it back, then the next call is not sent, and the credential shows neither in the reason nor in the log', async () => {
    const { call, folder, upstream, world } = await open({ http: { token: TOKEN } }, {});
    expect((await call('set_limit', { account: 'acct-9', cents: 1 })).observed.outcome).toBe('succeeded');

    upstream!.setToken('a-rotated-token-7e2d');
    const { observed } = await call('send_payment', { to: 'acct-9', cents: 700 });

    expect(observed).toMatchObject({ outcome: 'failed', source: 'not_sent' });
    expect(observed.notSentReason).toMatch(/^upstream ledger \(http:\/\/127\.0\.0\.1:\d+\/mcp\) refused the request with HTTP 401: /);
    expect(observed.notSentReason).toContain('Bearer [redacted]');
    const logs = world.logs.join('\n');
    expect(logs).toMatch(/connection given up \(HTTP 401: .*Bearer \[redacted\]/);
    for (const text of [observed.notSentReason!, logs]) expect(text).not.toContain(TOKEN.slice(0, 8));
    expect(folder.effectsOf('send_payment')).toEqual([]);
  });

  it('given structured content, then the agent reads it as JSON; given an error answer, then it is completed with that error, nothing paid', async () => {
    const { call, folder } = await open({ http: {} });

    const read = await call('read_balance', { account: 'acct-3' });
    const refused = await call('send_payment', { to: 'acct-3', cents: 0 });

    expect(read.observed).toMatchObject({ outcome: 'succeeded', source: 'response' });
    expect(JSON.parse(read.body!)).toEqual({ account: 'acct-3', cents: 10_000 });
    expect(refused.observed).toMatchObject({ outcome: 'failed', source: 'response' });
    expect(refused.body).toBe('a payment of 0 cents is refused: the amount must be positive');
    expect(folder.effectsOf('send_payment')).toEqual([]);
  });

  for (const era of ['both', 'legacy'] as const) {
    const revision = era === 'both' ? '2026-07-28' : '2025-11-25';
    it(`given an upstream speaking ${revision} that changes a tool and says so, then the tool is held with the reason and the way to look, and sent again once it matches`, async () => {
      const { call, folder, upstream, world } = await open({ http: { era } });
      expect((await call('set_limit', { account: 'acct-4', cents: 100 })).observed.outcome).toBe('succeeded');
      expect(world.logs.join('\n')).toContain(`(${revision}): 4 tools listed`);

      await upstream!.change('changed');
      await until('the refresh after list_changed', () => world.logs.some((line) => line.includes('tools/list read again (it said its tools changed)')));
      const changed = await call('set_limit', { account: 'acct-4', cents: 200 });
      const gone = await call('read_balance', { account: 'acct-4' });

      expect(changed.observed).toMatchObject({ outcome: 'failed', source: 'not_sent' });
      expect(changed.observed.notSentReason).toMatch(
        /^tool set_limit of upstream ledger changed since the contract was written \(its schema or annotations now read sha256:[0-9a-f]{64}, the contract has sha256:[0-9a-f]{64}\): set_limit is held, nothing was sent \(oncegate upstream diff ledger\)$/,
      );
      expect(gone.observed.notSentReason).toBe('upstream ledger no longer lists tool read_balance: read_balance is held, nothing was sent (oncegate upstream diff ledger)');
      expect(folder.effectsOf('set_limit')).toHaveLength(1);
      const logs = world.logs.join('\n');
      expect(logs).toMatch(/tools\/list read again \(it said its tools changed\): 3 tools; changed: set_limit; gone: read_balance/);
      expect(logs).toContain('upstream ledger no longer lists tool read_balance');

      await upstream!.change('original');
      await until('the refresh back', () => world.logs.filter((line) => line.includes('tools/list read again (it said its tools changed)')).length >= 2);
      expect((await call('set_limit', { account: 'acct-4', cents: 300 })).observed.outcome).toBe('succeeded');
      expect(world.logs.join('\n')).toContain('set_limit: tool set_limit of upstream ledger matches its contract again; it is sent');

      // Each change the upstream said is journaled on the channel's stream, with what changed and what it held.
      const noticed = async () => (await world.store.readStream('channel-mcp')).filter((event) => event.type === 'ChannelNoticed').map((event) => event.data);
      const deadline = Date.now() + 10_000;
      while ((await noticed()).length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const [away, back] = await noticed();
      expect(away).toMatchObject({
        channel: 'mcp',
        kind: 'upstream_tools_changed',
        message: 'upstream ledger lists 3 tools (it said its tools changed); changed: set_limit; gone: read_balance; held: set_limit (oncegate upstream diff ledger)',
        details: { upstream: 'ledger', why: 'it said its tools changed', tools: 3, added: [], removed: ['read_balance'], changed: ['set_limit'], held: ['set_limit'] },
      });
      expect(back).toMatchObject({ details: { tools: 4, added: ['read_balance'], removed: [], changed: ['set_limit'], held: [] } });
    });
  }

  it('given an upstream that cannot say its tools changed, then its tools are read again before every call, and a changed tool is held at once', async () => {
    const { call, folder } = await open({ http: { notifies: false } });
    expect((await call('set_limit', { account: 'acct-5', cents: 100 })).observed.outcome).toBe('succeeded');

    folder.variant = 'changed';
    const held = await call('set_limit', { account: 'acct-5', cents: 200 });

    expect(held.observed).toMatchObject({ outcome: 'failed', source: 'not_sent' });
    expect(held.observed.notSentReason).toContain('tool set_limit of upstream ledger changed since the contract was written');
    expect(folder.effectsOf('set_limit')).toHaveLength(1);
  });

  it('given a stdio upstream whose command cannot be started, then nothing is sent and the reason says so', async () => {
    const world = await DispatcherWorld.open({ kit: mcpKit, contract: mcpContract(tools({ command: ['/nonexistent/oncegate-upstream', '--stdio'] })) });
    cleanups.push(() => world.close());
    const { dispatcher } = await world.dispatcher();
    const { executionId } = await world.call('send_payment', { to: 'acct-8', cents: 100 });

    await world.dispatch(executionId, dispatcher);

    const observed = (await world.last(executionId, 'OutcomeObserved'))!.data as { outcome: string; source: string; notSentReason: string };
    expect(observed).toMatchObject({ outcome: 'failed', source: 'not_sent' });
    expect(observed.notSentReason).toMatch(/^could not open upstream ledger \(command \["\/nonexistent\/oncegate-upstream","--stdio"\]\): .*ENOENT/);
  });

  it('given a stdio upstream speaking 2025-11-25 only, then the channel falls back to it and the call goes through', async () => {
    const { call, world } = await open({ stdio: 'legacy' });

    const { observed, body } = await call('set_limit', { account: 'acct-6', cents: 100 });

    expect(observed).toMatchObject({ outcome: 'succeeded', source: 'response' });
    expect(body).toBe('the limit of acct-6 is now 100 cents');
    expect(world.logs.join('\n')).toMatch(/opened for a call \(2025-11-25, pid \d+\)/);
  });

  it('given a stdio child that exits, then it is started again after a pause that grows while it keeps exiting, a call finds it running again, and closing the channel stops it', async () => {
    const { call, folder, world, closeWorld } = await open({ stdio: 'both' });
    expect((await call('read_balance', { account: 'acct-7' })).observed.outcome).toBe('succeeded');
    const [first] = folder.pids();

    folder.down(true);
    process.kill(first!, 'SIGKILL');
    const pauses = () => world.logs.filter((line) => line.includes('upstream ledger: starting it again in')).map((line) => Number(/in (\d+) ms/.exec(line)![1]));
    await until('three restarts that failed', () => pauses().length >= 3, 30_000);
    expect(pauses().slice(0, 3)).toEqual([250, 500, 1000]);
    expect(world.logs.join('\n')).toContain('the test upstream is down');

    folder.down(false);
    const again = await call('read_balance', { account: 'acct-7' });
    expect(again.observed).toMatchObject({ outcome: 'succeeded', source: 'response' });
    const [second] = folder.pids();
    expect(second).not.toBe(first);

    await closeWorld();
    await until('the child to stop', () => !alive(second!), 10_000);
  });
});
