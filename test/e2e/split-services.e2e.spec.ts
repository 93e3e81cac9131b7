import { randomBytes } from 'node:crypto';
import { appendFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { servedTogether, startLocalDeployment, startService, type LocalDeployment, type ServiceProcess } from '@oncegate/deploy-local';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { freePort, gatewayFolder, oncegate, type GatewayFolder } from '../support/gateway-process';
import { foldExecution } from '@oncegate/domain';
import { toDomainEvent } from '@oncegate/execution-journal';
import { eventually, readJournal } from '../support/journal';
import { markdownTable } from '../support/markdown-table';
import { connectClient } from '../support/mcp-clients';
import { queryOnce, startPostgres, type PostgresHandle } from '../support/postgres';
import { executionOf, textOf } from '../support/scenario';

type McpClient = Awaited<ReturnType<typeof connectClient>>['client'];

/**
 * The services apart (`oncegate serve`, started by deploy/local): two gateways, two authorization, three HTTP
 * dispatchers, two result-delivery processes and a sealer, each its own OS process, on one real PostgreSQL 15, the
 * official MCP client against the gateways, the demo target as the real HTTP target. The tests run in order on
 * one deployment, each on calls of its own.
 */
/** Distinct calls spread over the layout: enough for every dispatcher to take its part (`npm run bench -- split` drives thousands). */
const DISTINCT_CALLS = 600;

describe('the services as processes of their own on PostgreSQL (deploy/local, oncegate serve)', () => {
  let server: PostgresHandle;
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let deployment: LocalDeployment;
  let storeUrl: string;
  let gatewayPorts: number[];
  let token: string;
  /** While it exists, authorization's handlers fail (`testing.fail_handling`). */
  let faultFile: string;
  const clients: McpClient[] = [];

  const sql = <Row extends Record<string, unknown>>(text: string, values: unknown[] = []): Promise<Row[]> => queryOnce<Row>(storeUrl, text, values);
  const client = async (url: string): Promise<McpClient> => {
    const connected = (await connectClient(url, token)).client;
    clients.push(connected);
    return connected;
  };
  const setConfig = (on: McpClient, name: string, value = 'v') => on.callTool({ name: 'set_config', arguments: { name, value } });
  /** The target's requests for one configuration entry. */
  const requestsFor = async (name: string) => (await target.effects()).requests.filter((request) => request.path === `/config/${name}`);
  /** An execution's status, folded from its stream in the journal. */
  const stateOf = async (id: string): Promise<string> =>
    foldExecution((await readJournal({ postgresUrl: storeUrl }, [`execution-${id}`])).map(toDomainEvent)).status;
  /** Which dispatcher sent each execution's last attempt. */
  const dispatchedBy = async (): Promise<Map<string, string>> => {
    const rows = await sql<{ execution: string; dispatcher: string }>(
      "SELECT stream_id AS execution, data->>'dispatcherId' AS dispatcher FROM oncegate.events WHERE type = 'Dispatched'",
    );
    return new Map(rows.map((row) => [row.execution.replace(/^execution-/, ''), row.dispatcher]));
  };
  const cli = (args: string[]) => oncegate(folder, args, { ONCEGATE_STORE_URL: storeUrl });
  /** Every service's parked events not yet replayed. */
  const parkedNow = async (): Promise<Array<{ parkedId: string; consumer: string; streamId: string; error: string }>> => {
    const listed = await cli(['parked', 'list', '--json']);
    if (listed.code !== 0) throw new Error(listed.stderr);
    return JSON.parse(listed.stdout) as Array<{ parkedId: string; consumer: string; streamId: string; error: string }>;
  };

  beforeAll(async () => {
    server = await startPostgres();
    target = await startDemoTargetProcess();
    const database = `oncegate_split_${randomBytes(4).toString('hex')}`;
    const admin = new PgClient({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    storeUrl = server.url(database);
    gatewayPorts = [await freePort(), await freePort(), await freePort()];
    folder = await gatewayFolder(target.url, {}, [], { store: { postgresUrl: storeUrl, urlFromEnv: true } });
    faultFile = join(folder.dir, 'authorization-fault');
    appendFileSync(
      folder.configFile,
        [
          // Short, for the kill tests' takeovers, but not so short that a process starved of CPU for a second or two
          // on a small machine (ten processes, two cores, the other test files beside) counts as gone, its attempts
          // settled as lost (outcome_unknown) while it still sends them.
          'instance_lease: 5s',
          'seal_every: 500ms',
          'dispatch_in_flight: 64',
          `testing: { fail_handling: { service: authorization, while_file_exists: '${faultFile}' } }`,
          '',
        ].join('\n'),
    );
    deployment = await startLocalDeployment({
      configFile: folder.configFile,
      cwd: folder.dir,
      env: { ONCEGATE_STORE_URL: storeUrl },
      gatewayPorts,
      layout: { gateway: 2, authorization: 2, 'dispatcher-http': 3, 'dispatcher-ssh': 0, 'result-delivery': 2, sealer: 1 },
    });
    token = deployment.of('gateway')[0]!.devToken!;
  }, 120_000);

  afterAll(async () => {
    for (const connected of clients) await connected.close().catch(() => undefined);
    // The rest is stopped even when a process had to be killed (which fails the stop).
    try {
      await deployment?.stop();
    } finally {
      await target?.stop();
      await server?.stop();
      folder?.dispose();
    }
  });

  it('given 500 identical calls spread over both gateways at once, then there is one execution, one target request, and every answer names it; once the sessions end, the records of the 500 answers commit in a few transactions', async () => {
    const [a, b] = deployment.of('gateway');
    const sessions = await Promise.all(Array.from({ length: 10 }, (_, i) => client((i % 2 === 0 ? a : b)!.url!)));
    await target.control('hold', { match: 'PUT /config/split-same' });
    const calls = Array.from({ length: 500 }, (_, i) => setConfig(sessions[i % sessions.length]!, 'split-same'));
    await eventually(async () => ((await requestsFor('split-same')).length > 0 ? true : undefined), 30_000, 'the request at the target');
    await target.control('release', { match: 'PUT /config/split-same' });
    const answers = (await Promise.all(calls)).map(executionOf);
    const ids = new Set(answers.map((answer) => answer.id));
    expect(ids.size).toBe(1);
    expect(answers.filter((answer) => answer.attached)).toHaveLength(499);
    expect(await requestsFor('split-same')).toHaveLength(1);
    const executions = await sql("SELECT stream_id FROM oncegate.events WHERE type = 'ExecutionAccepted'");
    expect(executions).toEqual([{ stream_id: `execution-${[...ids][0]}` }]);
    expect((await sql("SELECT 1 FROM oncegate.events WHERE type = 'Dispatched' AND stream_id = $1", [`execution-${[...ids][0]}`])).length).toBe(1);
    // The sessions end: every answer's delivery settles, and the 500 records are appended. Those of one execution
    // that settle while a record of it waits its turn are recorded together, and one that may wait for company is
    // not held while others wait behind it: a few transactions, not one each, 20 ms apart.
    await Promise.all(sessions.map((session) => (session.transport as StreamableHTTPClientTransport).terminateSession()));
    const records = await eventually(async () => {
      const [row] = await sql<{ records: string; transactions: string }>(
        "SELECT count(*) AS records, count(DISTINCT xmin::text) AS transactions FROM oncegate.events WHERE type IN ('ResultDelivered', 'AnswerGiven') AND stream_id = $1",
        [`execution-${[...ids][0]}`],
      );
      return Number(row!.records) === 500 ? Number(row!.transactions) : undefined;
    }, 15_000, "the 500 answers' records");
    expect(records).toBeLessThanOrEqual(50);
  }, 120_000);

  it(`given ${DISTINCT_CALLS.toLocaleString('en')} distinct calls over both gateways, then each reaches the target exactly once and the work is spread over all three dispatchers`, async () => {
    const gateways = deployment.of('gateway');
    const workers = await Promise.all(Array.from({ length: 16 }, (_, i) => client(gateways[i % gateways.length]!.url!)));
    let next = 0;
    const started = Date.now();
    const answers: string[] = [];
    await Promise.all(
      workers.map(async (worker) => {
        for (let i = next++; i < DISTINCT_CALLS; i = next++) {
          const answer = executionOf(await setConfig(worker, `spread-${i}`, `value-${i}`));
          answers.push(answer.state);
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    expect(answers.filter((state) => state !== 'completed' && state !== 'delivered')).toEqual([]);
    const log = await target.effects();
    const perName = new Map<string, number>();
    for (const request of log.requests) if (request.path.startsWith('/config/spread-')) perName.set(request.path, (perName.get(request.path) ?? 0) + 1);
    expect(perName.size).toBe(DISTINCT_CALLS);
    expect([...perName.values()].every((count) => count === 1)).toBe(true);

    const byDispatcher = new Map<string, number>();
    for (const dispatcher of (await dispatchedBy()).values()) byDispatcher.set(dispatcher, (byDispatcher.get(dispatcher) ?? 0) + 1);
    const dispatchers = deployment.of('dispatcher-http');
    const split = dispatchers.map((process) => ({
      'dispatcher process': `pid ${process.pid} (${process.instance})`,
      'executions dispatched': [...byDispatcher].filter(([id]) => id.endsWith(`/${process.instance}`)).reduce((sum, [, count]) => sum + count, 0),
    }));
    process.stdout.write(`\n${DISTINCT_CALLS} distinct calls in ${seconds.toFixed(1)} s (${(DISTINCT_CALLS / seconds).toFixed(0)} calls/s), split over the HTTP dispatchers:\n${markdownTable(split)}\n`);
    // Each of the three takes a part of its own (more than one call in twenty).
    for (const row of split) expect(row['executions dispatched']).toBeGreaterThan(DISTINCT_CALLS / 20);
  }, 300_000);

  it('given a dispatcher killed with -9 while it holds attempts in flight, then its partitions and attempts are taken over by class: idempotent ones sent again with the same key, irreversible ones held for review, none sent blindly twice', async () => {
    const gateway = deployment.of('gateway')[0]!;
    const caller = await client(gateway.url!);
    await target.control('hold', { match: 'PUT /config/kill-' });
    await target.control('hold', { match: 'POST /payments' });
    const idempotent = Array.from({ length: 9 }, (_, i) => setConfig(caller, `kill-${i}`).catch((error: unknown) => error));
    const payments = Array.from({ length: 6 }, (_, i) =>
      caller.callTool({ name: 'send_payment', arguments: { payment_reference: `split-kill-${i}`, amount_cents: 100 + i, card_token: 'tok_split_0001' } }).catch((error: unknown) => error),
    );
    await eventually(async () => {
      const log = await target.effects();
      const held = log.requests.filter((request) => request.path.startsWith('/config/kill-') || request.path === '/payments');
      return held.length >= 15 ? true : undefined;
    }, 30_000, 'all 15 attempts to be in flight');
    // The victim is the dispatcher with the most of these attempts in flight (dispatched, no outcome yet), not the one
    // that dispatched the most over the earlier tests.
    const inFlightOf = async (instance: string) =>
      new Set((await sql<{ id: string }>(
        "SELECT replace(stream_id, 'execution-', '') AS id FROM oncegate.events e WHERE type = 'Dispatched' AND data->>'dispatcherId' LIKE $1 AND NOT EXISTS (SELECT 1 FROM oncegate.events o WHERE o.stream_id = e.stream_id AND o.type IN ('OutcomeObserved','OutcomeUnknown') AND o.position > e.position)",
        [`%/${instance}`],
      )).map((row) => row.id));
    const holding = (await Promise.all(deployment.of('dispatcher-http').map(async (process) => ({ process, inFlight: await inFlightOf(process.instance) }))))
      .sort((x, y) => y.inFlight.size - x.inFlight.size)[0]!;
    const victim: ServiceProcess = holding.process;
    const inFlight = holding.inFlight;
    expect(inFlight.size).toBeGreaterThan(0);
    await victim.kill();
    // The target answers what it held; the killed process can no longer hear it.
    await target.control('release', { match: 'PUT /config/kill-' });
    await target.control('release', { match: 'POST /payments' });
    await Promise.all([...idempotent, ...payments]);

    const states = await eventually(async () => {
      const rows = await sql<{ id: string; tool: string }>(
        "SELECT replace(stream_id, 'execution-', '') AS id, data->>'toolName' AS tool FROM oncegate.events WHERE type = 'ExecutionAccepted' AND stream_id = ANY($1)",
        [[...inFlight].map((id) => `execution-${id}`)],
      );
      const views = await Promise.all(rows.map(async (row) => ({ ...row, state: await stateOf(row.id) })));
      return views.every((view) => ['completed', 'delivered', 'completed_result_not_delivered', 'needs_review'].includes(view.state)) ? views : undefined;
    }, 60_000, 'the attempts of the killed dispatcher to be settled');
    for (const view of states) {
      const requests = (await target.effects()).requests.filter((request) => request.idempotencyKey === view.id);
      if (view.tool === 'send_payment') {
        // Irreversible: never sent again on its own; a person decides.
        expect(view.state).toBe('needs_review');
        expect(requests).toHaveLength(1);
      } else {
        expect(['completed', 'delivered', 'completed_result_not_delivered']).toContain(view.state);
        // Every request carries the execution id as its key, so the target applies it once.
        expect(requests.length).toBeGreaterThanOrEqual(1);
        expect(requests.every((request) => request.idempotencyKey === view.id)).toBe(true);
      }
    }
    await deployment.add('dispatcher-http');
  }, 180_000);

  it('given a gateway killed with -9 mid-call, when the agent retries through the other gateway, then the retry attaches and gets the one outcome', async () => {
    const [first, second] = deployment.of('gateway');
    const dying = await client(first!.url!);
    await target.control('hold', { match: 'PUT /config/gateway-kill' });
    const lost = setConfig(dying, 'gateway-kill').catch((error: unknown) => error);
    await eventually(async () => ((await requestsFor('gateway-kill')).length === 1 ? true : undefined), 30_000, 'the request at the target');
    await first!.kill();
    // Not waited for: the client may only give up on it after its own request timeout.
    void lost;
    const survivor = await client(second!.url!);
    const retry = setConfig(survivor, 'gateway-kill');
    await new Promise((resolve) => setTimeout(resolve, 300));
    await target.control('release', { match: 'PUT /config/gateway-kill' });
    const answer = executionOf(await retry);
    expect(answer).toMatchObject({ attached: true });
    expect(['completed', 'delivered']).toContain(answer.state);
    expect(await requestsFor('gateway-kill')).toHaveLength(1);
    expect(answer.id).toBe((await requestsFor('gateway-kill'))[0]!.idempotencyKey);
    await deployment.add('gateway', gatewayPorts[2]);
  }, 120_000);

  it('given a gateway serving authorization in its own process (oncegate serve gateway authorization), when a call comes, then it is accepted and authorized in one commit and a dispatcher apart sends it once', async () => {
    const together = await startService(servedTogether(['gateway', 'authorization']), {
      configFile: folder.configFile,
      cwd: folder.dir,
      env: { ONCEGATE_STORE_URL: storeUrl },
      port: await freePort(),
    });
    try {
      expect(together.output()).toMatch(/Oncegate gateway\+authorization is running/);
      const answer = executionOf(await setConfig(await client(together.url!), 'served-together'));
      expect(['completed', 'delivered']).toContain(answer.state);
      const events = await readJournal({ postgresUrl: storeUrl }, [`execution-${answer.id}`]);
      const of = (type: string) => events.find((event) => event.type === type)!;
      const [accepted, authorized, dispatched] = [of('ExecutionAccepted'), of('ExecutionAuthorized'), of('Dispatched')];
      // Accepted and authorized in the gateway's commit; dispatched by a dispatcher process after it read that.
      expect(authorized.position - accepted.position).toBe(1);
      expect(authorized.recordedAt).toBe(accepted.recordedAt);
      expect(dispatched.position).toBeGreaterThan(authorized.position);
      expect((await dispatchedBy()).get(answer.id)).toMatch(/^dispatcher-http@/);
      expect(await requestsFor('served-together')).toHaveLength(1);
    } finally {
      await together.stop();
    }
  }, 120_000);

  it('given authorization failing on an event, then the event is parked and listed, nothing of its execution runs, and after the fix a replay completes it', async () => {
    // Authorization members still behind on earlier executions (a loaded machine) fail on their events too once the
    // fault is made, and park them: only an execution that begins after it is this test's.
    const earlier = new Set(
      (await sql<{ stream_id: string }>("SELECT DISTINCT stream_id FROM oncegate.events WHERE stream_id LIKE 'execution-%'")).map((row) => row.stream_id),
    );
    writeFileSync(faultFile, 'the fault\n');
    // The fault is lifted whatever happens here, so a failure of this test is not also every later test's.
    onTestFinished(() => rmSync(faultFile, { force: true }));
    const caller = await client(deployment.of('gateway')[0]!.url!);
    const waiting = setConfig(caller, 'parked-one');
    const parked = await eventually(async () => {
      const listed = await cli(['parked', 'list', '--consumer', 'authorization', '--json']);
      if (listed.code !== 0) throw new Error(listed.stderr);
      const open = JSON.parse(listed.stdout) as Array<{ parkedId: string; type: string; streamId: string; error: string }>;
      const ours = open.filter((event) => !earlier.has(event.streamId));
      return ours.length > 0 ? ours : undefined;
    }, 30_000, 'the parked event');
    expect(parked[0]).toMatchObject({ type: 'ExecutionAccepted' });
    expect(parked[0]!.error).toContain('testing.fail_handling');
    const stream = parked[0]!.streamId;
    expect((await sql('SELECT type FROM oncegate.events WHERE stream_id = $1', [stream])).map((row) => row['type'])).not.toContain('ExecutionAuthorized');
    expect(await requestsFor('parked-one')).toEqual([]);

    rmSync(faultFile);
    const replayed = await cli(['parked', 'replay', '--all', '--consumer', 'authorization']);
    expect(replayed.code, replayed.stderr).toBe(0);
    const answer = executionOf(await waiting);
    expect(['completed', 'delivered']).toContain(answer.state);
    expect(await requestsFor('parked-one')).toHaveLength(1);
    await eventually(async () => {
      const listed = await cli(['parked', 'list', '--consumer', 'authorization', '--json']);
      return (JSON.parse(listed.stdout) as unknown[]).length === 0 ? true : undefined;
    }, 15_000, 'nothing parked any more');
  }, 120_000);

  it('given PostgreSQL stopped mid-run, then calls are told the store is unavailable, nothing is sent without Dispatched committed, and after the restart every service goes on without losing or repeating a dispatch', async () => {
    const gateways = deployment.of('gateway');
    const workers = await Promise.all(gateways.map((gateway) => client(gateway.url!)));
    let stopped = false;
    let sequence = 0;
    const errors: string[] = [];
    /** Each worker's call in flight, with when it began: what a worker waits on when calls stop coming back. */
    const inFlight: Array<{ name: string; since: number } | undefined> = workers.map(() => undefined);
    const running = workers.map(async (worker, index) => {
      while (!stopped) {
        const name = `outage-${sequence++}`;
        inFlight[index] = { name, since: Date.now() };
        try {
          const result = await setConfig(worker, name);
          if ((result as { isError?: boolean }).isError) errors.push(`${name}: ${textOf(result)}`);
        } catch (error) {
          errors.push(`${name}: ${String((error as Error).message)}`);
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      inFlight[index] = undefined;
    });
    await eventually(async () => (sequence > 20 ? true : undefined), 30_000, 'calls before the outage');
    const parkedBefore = new Set((await parkedNow()).map((parked) => parked.parkedId));
    await server.shutdown();
    // A call made while the store is down is told so at once.
    // A failure of the request itself is said with its cause (fetch's own message names none).
    const during = await setConfig(workers[0]!, 'outage-during').then(textOf, (error: unknown) => {
      const cause = (error as Error).cause as { code?: string; message?: string } | undefined;
      return `${(error as Error).message}${cause === undefined ? '' : ` (${cause.code ?? cause.message})`}`;
    });
    errors.push(during);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    await server.start();
    const after = sequence;
    await eventually(async () => (sequence > after + 20 ? true : undefined), 60_000, 'calls after the outage').catch(async (error: unknown) => {
      // Say what each worker waits on, what the calls were answered, what the journal holds of the calls in flight,
      // and the end of what each gateway wrote.
      const waiting = await Promise.all(
        inFlight.map(async (call, index) => {
          if (call === undefined) return `worker ${index}: no call`;
          const streams = await sql<{ stream_id: string; types: string }>(
            "SELECT stream_id, string_agg(type, ' → ' ORDER BY position) AS types FROM oncegate.events WHERE stream_id IN (SELECT stream_id FROM oncegate.events WHERE type = 'ExecutionAccepted' AND data::text LIKE $1) GROUP BY stream_id",
            [`%${call.name}"%`],
          ).catch((failure: unknown) => [{ stream_id: '(journal unread)', types: String(failure) }]);
          return `worker ${index}: ${call.name} for ${Date.now() - call.since} ms; journal: ${streams.map((row) => `${row.stream_id}: ${row.types}`).join('; ') || 'nothing'}`;
        }),
      );
      const outputs = (['gateway', 'authorization', 'dispatcher-http'] as const).flatMap((service) =>
        deployment.of(service).map((member, index) => `${service} ${index} (${member.child.exitCode === null && member.child.signalCode === null ? 'runs' : 'exited'}):\n${member.output().slice(-1500)}`),
      );
      throw new Error(`${(error as Error).message} (${sequence - after} begun since the restart)\n${waiting.join('\n')}\nlast answers: ${errors.slice(-6).join(' | ')}\n${outputs.join('\n')}`);
    });
    stopped = true;
    await Promise.all(running);
    const first = gateways[0]!;
    const state = first.child.exitCode === null && first.child.signalCode === null ? 'still runs' : `exited (${first.child.exitCode ?? first.child.signalCode})`;
    expect(during, `the gateway asked ${state}; the end of what it wrote:\n${first.output().slice(-3000)}`).toMatch(/unavailable|cannot write its journal/i);

    // Every request that reached the target carries an execution id whose Dispatched was committed before it.
    const dispatched = await dispatchedBy();
    const log = await target.effects();
    const outage = log.requests.filter((request) => request.path.startsWith('/config/outage-'));
    expect(outage.length).toBeGreaterThan(0);
    for (const request of outage) expect(dispatched.has(request.idempotencyKey!)).toBe(true);
    // Nothing is stuck: every execution accepted in the run reaches a settled state. One exception is the truth and
    // not a loss: a Dispatched the server committed while the connection broke, so its dispatcher took it as not
    // written and sent nothing; the sweeper then records the attempt unknown (lost, or past its deadline), and no
    // answer can come. Such an execution has no request at the target; any other must have its outcome.
    const unsettled = async () => {
      const sentKeys = new Set((await target.effects()).requests.map((request) => request.idempotencyKey));
      return (
        await sql<{ stream_id: string; reason: string | null }>(
          `SELECT a.stream_id, (SELECT u.data->>'reason' FROM oncegate.events u WHERE u.stream_id = a.stream_id AND u.type = 'OutcomeUnknown' ORDER BY u.position DESC LIMIT 1) AS reason
             FROM oncegate.events a WHERE a.type = 'ExecutionAccepted'
             AND a.stream_id IN (SELECT stream_id FROM oncegate.events WHERE type = 'Dispatched')
             AND NOT EXISTS (SELECT 1 FROM oncegate.events o WHERE o.stream_id = a.stream_id AND o.type IN ('OutcomeObserved', 'ReviewRequired'))`,
        )
      ).filter(({ stream_id, reason }) => !(reason !== null && ['dispatcher_lost', 'attempt_deadline_passed'].includes(reason) && !sentKeys.has(stream_id.slice('execution-'.length))));
    };
    // Leases go unrenewed while the store is away, so another instance may give an attempt up for lost
    // (dispatcher_lost) while its dispatcher holds the answer: that answer still settles it once it lands. An
    // attempt still in flight has its response timeout (20 s) and the grace: wait for that more than once; when
    // one does not settle, say which executions and what their streams hold.
    await eventually(async () => ((await unsettled()).length === 0 ? true : undefined), 120_000, 'every dispatched execution to have an outcome').catch(async (error: unknown) => {
      const stuck = await Promise.all(
        (await unsettled()).slice(0, 5).map(async (row) => `${row.stream_id}: ${(await sql<{ type: string }>('SELECT type FROM oncegate.events WHERE stream_id = $1 ORDER BY position', [row.stream_id])).map((event) => event.type).join(' → ')}`),
      );
      throw new Error(`${(error as Error).message}:\n${stuck.join('\n')}`);
    });
    // The outage is the store's, not a handler's fault: no service parked an event for it (each waited for the store).
    expect((await parkedNow()).filter((parked) => !parkedBefore.has(parked.parkedId))).toEqual([]);
    // No dispatch repeated: one request per attempt recorded.
    const attempts = await sql<{ id: string; n: string }>("SELECT replace(stream_id, 'execution-', '') AS id, count(*)::text AS n FROM oncegate.events WHERE type = 'Dispatched' GROUP BY stream_id");
    const perKey = new Map<string, number>();
    for (const request of outage) perKey.set(request.idempotencyKey!, (perKey.get(request.idempotencyKey!) ?? 0) + 1);
    for (const { id, n } of attempts) if (perKey.has(id)) expect(perKey.get(id)).toBeLessThanOrEqual(Number(n));
  }, 300_000);

  it('given a process that does not stop on SIGTERM (here: suspended), when the deployment stops it, then it is killed after the wait and the stop names it', async () => {
    const frozen = await deployment.add('sealer');
    process.kill(frozen.pid, 'SIGSTOP');
    const stopping = frozen.stop(2_000);
    await expect(stopping).rejects.toThrow(`sealer (pid ${frozen.pid}) did not stop within 2 s of SIGTERM and was killed`);
    expect(frozen.child.signalCode).toBe('SIGKILL');
  }, 60_000);
});
