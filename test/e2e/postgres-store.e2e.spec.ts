import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { freePort, gatewayFolder, oncegate, startGatewayProcess, type GatewayFolder, type GatewayProcess } from '../support/gateway-process';
import { eventually, executionEvents, executionIds } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { queryOnce, startPostgres } from '../support/postgres';
import { sharedPostgres, type SharedPostgres } from '../support/shared-servers';
import { executionOf } from '../support/scenario';

/** Never sent anywhere that checks it (the test server trusts loopback): it must only never be printed. */
const PASSWORD = 'pg-pass-canary-3b8e61';

const payment = (reference: string) => ({ payment_reference: reference, amount_cents: 4200, card_token: 'tok_postgres_0001' });

/** `store.driver: postgres`: the journal and the sealed blobs on a real PostgreSQL 15, keys and vault in the data folder. */
describe('the gateway on PostgreSQL (store.driver: postgres)', () => {
  let server: SharedPostgres;
  let target: DemoTargetProcess;
  let folder: GatewayFolder | undefined;
  let gateway: GatewayProcess | undefined;

  /** A database of its own for one test, on the run's shared server (or `on`); its URL carries the canary password. */
  async function freshDatabase(on: { url(database?: string): string; port: number } = server): Promise<{ url: string; database: string }> {
    const database = `oncegate_${randomBytes(5).toString('hex')}`;
    const admin = new Client({ connectionString: on.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    return { url: `postgres://postgres:${PASSWORD}@127.0.0.1:${on.port}/${database}`, database };
  }

  async function paymentsAtTarget(): Promise<{ effects: number; requests: number }> {
    const log = await target.effects();
    return { effects: log.byEndpoint['POST /payments'] ?? 0, requests: log.requests.filter((request) => request.endpoint === 'POST /payments').length };
  }

  beforeAll(async () => {
    [server, target] = await Promise.all([sharedPostgres(), startDemoTargetProcess()]);
  });
  afterEach(async () => {
    await gateway?.kill();
    gateway = undefined;
    folder?.dispose();
    folder = undefined;
    await target.control('reset-state');
  });
  afterAll(async () => {
    await target?.stop();
  });

  it('given a payment whose connection dropped, when retried, then it attaches, took effect once, and the journal exported from PostgreSQL verifies', async () => {
    const { url } = await freshDatabase();
    folder = await gatewayFolder(target.url, { seal_every: '200ms' }, [], { store: { postgresUrl: url } });
    gateway = await startGatewayProcess(folder);
    expect(gateway.output()).toMatch(new RegExp(`store: +postgres postgres://postgres:\\*\\*\\*@127\\.0\\.0\\.1:${server.port}/`));

    await target.control('hold', { match: 'POST /payments' });
    const drop = droppableFetch();
    const first = await connectClient(gateway.url, gateway.devToken, { fetch: drop.fetch });
    const lost = first.client.callTool({ name: 'send_payment', arguments: payment('pg-dropped-0001') }).catch((error: unknown) => error);
    await eventually(async () => ((await paymentsAtTarget()).requests === 1 ? true : undefined));
    drop.dropAll();
    await first.client.close();
    await lost;
    await target.control('release', { match: 'POST /payments' });
    const [executionId] = await eventually(async () => {
      const ids = await executionIds(folder!.journal);
      return ids.length === 1 ? ids : undefined;
    });
    await eventually(async () => ((await executionEvents(folder!.journal, executionId!)).includes('ResultDeliveryFailed') ? true : undefined));

    const second = await connectClient(gateway.url, gateway.devToken);
    const retried = executionOf(await second.client.callTool({ name: 'send_payment', arguments: payment('pg-dropped-0001') }));
    await second.client.listTools();
    await second.client.close();
    expect(retried).toMatchObject({ id: executionId, attached: true, state: 'completed_result_not_delivered', attempts: 1 });
    expect(await paymentsAtTarget()).toEqual({ effects: 1, requests: 1 });
    const types = await eventually(async () => {
      const events = await executionEvents(folder!.journal, executionId!);
      return events.includes('ResultDelivered') ? events : undefined;
    });
    expect(types.filter((type) => ['Dispatched', 'OutcomeObserved', 'ResultDeliveryFailed', 'RetryAttached', 'ResultDelivered'].includes(type))).toEqual([
      'Dispatched',
      'OutcomeObserved',
      'ResultDeliveryFailed',
      'RetryAttached',
      'ResultDelivered',
    ]);

    // The arguments and the result are sealed on the server, beside the journal; the data folder holds no store.
    const blobs = await queryOnce<{ kind: string }>(url, 'SELECT kind FROM oncegate.sealed_blobs WHERE owner = $1 ORDER BY kind', [executionId]);
    expect(blobs.map((blob) => blob.kind)).toEqual(['arguments', 'result']);
    expect(existsSync(join(folder.dataDir, 'events.db'))).toBe(false);
    expect(existsSync(join(folder.dataDir, 'vault.db'))).toBe(true);
    expect(existsSync(join(folder.dataDir, 'mcp-streams.db'))).toBe(true);

    await eventually(async () => ((await queryOnce(url, "SELECT 1 FROM oncegate.events WHERE type = 'JournalSealed'")).length > 0 ? true : undefined), 10_000, 'a seal');
    await gateway.stop();
    const exported = await oncegate(folder, ['journal', 'export']);
    expect(exported.code, exported.stderr).toBe(0);
    const file = join(folder.dir, 'journal.ndjson');
    writeFileSync(file, exported.stdout);
    const verified = await oncegate(folder, ['audit', 'verify', file, '--public-key', join(folder.dataDir, 'keys', 'journal-seal.pub.pem')]);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/^OK: \d+ events, [1-9]\d* seals/);
    const investigated = await oncegate(folder, ['investigate', executionId!]);
    expect(investigated.code, investigated.stderr).toBe(0);
    expect(investigated.stdout).toMatch(/RetryAttached/);
  });

  it('given a call in flight when the gateway is killed -9, when it restarts on the same store and the client resumes its stream, then the call is found in the journal and answered with what became of it', async () => {
    // The stream's calls are searched for from the position the gateway had seen when they came (no read on their path).
    const { url } = await freshDatabase();
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: url } });
    gateway = await startGatewayProcess(folder);
    const warm = await connectClient(gateway.url, gateway.devToken);
    await warm.client.callTool({ name: 'set_config', arguments: { name: 'pg.before', value: 'yes' } });
    await warm.client.close();
    await target.control('hold', { match: 'PUT /config/:name' });
    const seen = droppableFetch();
    const { client } = await connectClient(gateway.url, gateway.devToken, { fetch: seen.fetch, reconnect: { initialDelayMs: 1_000, maxRetries: 40 } });
    const call = client.callTool({ name: 'set_config', arguments: { name: 'pg.killed.mid.call', value: 'yes' } }, undefined, { timeout: 120_000 });
    await eventually(async () => ((await target.effects()).requests.some((request) => request.path === '/config/pg.killed.mid.call') ? true : undefined), 10_000, 'the write to arrive');
    const executionId = await eventually(async () => (await executionIds(folder!.journal)).at(-1));
    await gateway.kill();
    await target.control('release', { match: 'PUT /config/:name' });
    gateway = await startGatewayProcess(folder);

    const noAnswer = new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 30_000).unref());
    const result = await Promise.race([call, noAnswer]);
    await client.close();
    expect(result).not.toBe('no answer');
    expect(executionOf(result)).toMatchObject({ id: executionId, attached: false, state: 'outcome_unknown' });
    expect((await target.effects()).requests.filter((request) => request.path === '/config/pg.killed.mid.call')).toHaveLength(1);
    expect(seen.requests.some((request) => request.method === 'GET' && request.lastEventId !== null)).toBe(true);
  }, 90_000);

  it('given a gateway killed with -9 while a payment is in flight, when it restarts on the same store and the call is retried, then the retry attaches and nothing is sent again', async () => {
    const { url } = await freshDatabase();
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: url } });
    gateway = await startGatewayProcess(folder);
    await target.control('hold', { match: 'POST /payments' });
    const { client } = await connectClient(gateway.url, gateway.devToken);
    void client.callTool({ name: 'send_payment', arguments: payment('pg-killed-00001') }).catch(() => undefined);
    await eventually(async () => ((await paymentsAtTarget()).requests === 1 ? true : undefined), 10_000, 'the payment held at the target');
    await gateway.kill();
    await client.close().catch(() => undefined);
    await target.control('release', { match: 'POST /payments' });

    gateway = await startGatewayProcess(folder);
    const [executionId] = await executionIds(folder.journal);
    // The killed process's attempt is settled by its class: an irreversible payment is held for review.
    await eventually(async () => ((await executionEvents(folder!.journal, executionId!)).includes('ReviewRequired') ? true : undefined), 15_000, 'the lost attempt held for review');
    const again = await connectClient(gateway.url, gateway.devToken);
    const retried = executionOf(await again.client.callTool({ name: 'send_payment', arguments: payment('pg-killed-00001') }));
    await again.client.close();
    expect(retried).toMatchObject({ id: executionId, attached: true, state: 'needs_review', attempts: 1 });
    expect((await paymentsAtTarget()).requests).toBe(1);
    const events = await executionEvents(folder.journal, executionId!);
    expect(events.filter((type) => type === 'Dispatched')).toHaveLength(1);
    expect(events).toContain('RetryAttached');
    const listed = await oncegate(folder, ['review', 'list']);
    expect(listed.stdout).toContain(`${executionId}\tsend_payment`);
  });

  it('given a listen port already taken, when a gateway on PostgreSQL starts, then it stops at once naming the port (no server connection keeps it alive)', async () => {
    const { url } = await freshDatabase();
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: url } });
    gateway = await startGatewayProcess(folder);
    const started = Date.now();
    // The same configuration, so the same port.
    const refused = await startGatewayProcess(folder).then(
      () => '',
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/gateway exited with 1/);
    expect(refused).toMatch(/cannot listen on 127\.0\.0\.1:\d+ for the MCP endpoint: the port is taken by process \d+ \(oncegate start\) \(EADDRINUSE\); set listen\.port or ONCEGATE_PORT/);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it('given the PostgreSQL server goes away while the gateway runs, when a call arrives, then it is told storage is unavailable, nothing is sent, and calls succeed once the server is back', async () => {
    // A server of its own: this test shuts it down.
    const own = await startPostgres();
    onTestFinished(() => own.stop());
    const { url } = await freshDatabase(own);
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: url } });
    gateway = await startGatewayProcess(folder);
    const { client } = await connectClient(gateway.url, gateway.devToken);
    expect((await client.callTool({ name: 'set_config', arguments: { name: 'before.down', value: '1' } })).isError).toBe(false);

    await own.shutdown();
    try {
      const refused = await client
        .callTool({ name: 'set_config', arguments: { name: 'while.down', value: '2' } }, undefined, { timeout: 20_000 })
        .catch((error: unknown) => error);
      // The journal cannot be read either, so the request may be refused whole (HTTP 503) before the call is decoded.
      expect([-32012, 503]).toContain((refused as { code: number }).code);
      expect(String((refused as Error).message)).toMatch(/Storage unavailable/);
      expect((await target.effects()).requestsTotal).toBe(1);
    } finally {
      await own.start();
    }

    const after = await eventually(async () => {
      const result = await client.callTool({ name: 'set_config', arguments: { name: 'after.down', value: '3' } }).catch(() => undefined);
      return result?.isError === false ? result : undefined;
    }, 20_000, 'a call after the server came back');
    expect(executionOf(after).state).toMatch(/^(completed|delivered|completed_result_not_delivered)$/);
    await client.close();
    expect(gateway.output()).not.toContain(PASSWORD);
  });

  it('given the store URL with a password, in the file or in ONCEGATE_STORE_URL, when the gateway and the commands run or fail, then the password appears in no output', async () => {
    const outputs: string[] = [];
    const commands = [['agents', 'list'], ['vault', 'status'], ['review', 'list'], ['approvals', 'list'], ['runs', 'list'], ['journal', 'export']];

    for (const urlFromEnv of [false, true]) {
      const { url } = await freshDatabase();
      const env = urlFromEnv ? { ONCEGATE_STORE_URL: url } : {};
      folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: url, urlFromEnv } });
      gateway = await startGatewayProcess(folder, env);
      const { client } = await connectClient(gateway.url, gateway.devToken);
      await client.callTool({ name: 'set_config', arguments: { name: 'canary.flag', value: 'on' } });
      await client.close();
      for (const args of commands) {
        const result = await oncegate(folder, args, env);
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
        outputs.push(result.stdout, result.stderr);
      }
      await gateway.stop();
      outputs.push(gateway.output());
      expect(gateway.output()).toContain('postgres://postgres:***@127.0.0.1');
      folder.dispose();
    }

    // A server that cannot be reached: the start and a command fail, naming the server without the password.
    const unreachable = `postgres://postgres:${PASSWORD}@127.0.0.1:${await freePort()}/oncegate`;
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: unreachable }, vault: false });
    const refused = await startGatewayProcess(folder).then(
      () => '',
      (error: Error) => error.message,
    );
    expect(refused).toMatch(/gateway exited with 1/);
    expect(refused).toMatch(/storage unavailable: the store postgres:\/\/postgres@127\.0\.0\.1:\d+\/oncegate/);
    const command = await oncegate(folder, ['agents', 'list']);
    expect(command.code).toBe(1);
    expect(command.stderr).toMatch(/storage unavailable/);
    outputs.push(refused, command.stdout, command.stderr);

    // And a URL that is not a PostgreSQL URL is named without repeating it.
    writeFileSync(folder.configFile, `data_dir: ${folder.dataDir}\nstore: { driver: postgres, url: 'mysql://root:${PASSWORD}@db/x' }\n`);
    const invalid = await oncegate(folder, ['agents', 'list']);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/store\.url: not a PostgreSQL URL/);
    outputs.push(invalid.stdout, invalid.stderr);

    for (const output of outputs) expect(output).not.toContain(PASSWORD);
  }, 90_000);
});
