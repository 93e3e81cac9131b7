import { randomBytes } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { Client as PgClient } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalDeployment, type LocalDeployment, type ServiceProcess } from '@oncegate/deploy-local';
import { startDemoTargetProcess, type DemoTargetProcess } from '../support/demo-target-process';
import { CREDENTIAL_CANARY, freePort, gatewayFolder, type GatewayFolder } from '../support/gateway-process';
import { eventually } from '../support/journal';
import { connectClient, droppableFetch } from '../support/mcp-clients';
import { startPostgres, type PostgresHandle } from '../support/postgres';
import { startCollector, type CollectorHandle, type ReceivedSpan } from '../support/otel-collector';
import { parseExposition, type ParsedSample } from '../support/prometheus';
import { readJournal } from '../support/journal';
import { executionOf } from '../support/scenario';
import { prefixesOf } from '../support/canaries';

/** A secret argument (`send_payment`'s card_token): never in a metric, a label or a readiness answer, nor any prefix of it. */
const CARD_CANARY = 'card-canary-0d9e2b71f4';

const get = async (base: string, path: string) => {
  const response = await fetch(new URL(path, base));
  return { status: response.status, body: await response.text() };
};

/**
 * The operations listener of every process of a split deployment (deploy/local's processes, each with `operations`
 * on a port of its own) on a real PostgreSQL 15: what /metrics, /healthz and /readyz say, read with the Prometheus
 * project's own parser.
 */
describe('operating the services apart: /metrics, /healthz and /readyz of every process', () => {
  let server: PostgresHandle;
  let target: DemoTargetProcess;
  let folder: GatewayFolder;
  let deployment: LocalDeployment;
  let token: string;
  let collector: CollectorHandle;
  let storeUrl: string;

  const scrape = async (process: ServiceProcess): Promise<{ text: string; samples: ParsedSample[] }> => {
    const { status, body } = await get(process.operationsUrl!, '/metrics');
    expect(status).toBe(200);
    return { text: body, samples: await parseExposition(body) };
  };
  const valueOf = (samples: readonly ParsedSample[], family: string, labels: Record<string, string>) =>
    samples.filter((sample) => sample.family === family && Object.entries(labels).every(([name, value]) => sample.labels[name] === value)).reduce((sum, sample) => sum + sample.value, 0);

  beforeAll(async () => {
    [server, target, collector] = await Promise.all([startPostgres(), startDemoTargetProcess(), startCollector()]);
    const database = `oncegate_ops_${randomBytes(4).toString('hex')}`;
    const admin = new PgClient({ connectionString: server.url() });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await admin.end();
    storeUrl = server.url(database);
    folder = await gatewayFolder(target.url, { call_wait: '20s' }, [], { store: { postgresUrl: storeUrl, urlFromEnv: true } });
    appendFileSync(folder.configFile, ['instance_lease: 2s', 'seal_every: 500ms', 'operations: { host: 127.0.0.1, port: 0 }', `tracing: { endpoint: '${collector.endpoint}' }`, ''].join('\n'));
    deployment = await startLocalDeployment({
      configFile: folder.configFile,
      cwd: folder.dir,
      env: { ONCEGATE_STORE_URL: storeUrl },
      gatewayPorts: [await freePort()],
      layout: { gateway: 1, authorization: 1, 'dispatcher-http': 1, 'dispatcher-ssh': 0, 'result-delivery': 1, sealer: 1, 'relay-kafka': 0 },
    });
    token = deployment.of('gateway')[0]!.devToken!;
    // The parser is built once (Go, modules from the module proxy) before any test waits on it.
    await parseExposition('');
  }, 300_000);

  afterAll(async () => {
    // The rest is stopped even when a process had to be killed (which fails the stop).
    try {
      await deployment?.stop();
    } finally {
      await target?.stop();
      await server?.stop();
      await collector?.stop();
      folder?.dispose();
    }
  });

  it('given every process, then each has its own operations listener, alive and ready, naming what it checked', async () => {
    expect(deployment.processes.map((process) => [process.service, process.operationsUrl !== undefined])).toEqual(deployment.processes.map((process) => [process.service, true]));
    expect(new Set(deployment.processes.map((process) => process.operationsUrl)).size).toBe(deployment.processes.length);
    for (const process of deployment.processes) {
      expect(await get(process.operationsUrl!, '/healthz'), process.service).toEqual({ status: 200, body: 'ok\n' });
      const ready = await get(process.operationsUrl!, '/readyz');
      expect(ready.status, `${process.service}: ${ready.body}`).toBe(200);
      expect(ready.body).toContain('ok store');
    }
    for (const service of ['authorization', 'dispatcher-http'] as const) expect((await get(deployment.of(service)[0]!.operationsUrl!, '/readyz')).body).toContain('ok vault');
    expect((await get(deployment.of('result-delivery')[0]!.operationsUrl!, '/readyz')).body).toContain('ok consumer result-delivery');
    expect((await get(deployment.of('gateway')[0]!.operationsUrl!, '/nothing')).status).toBe(404);
    expect((await fetch(new URL('/metrics', deployment.of('gateway')[0]!.operationsUrl!), { method: 'POST' })).status).toBe(405);
  });

  it('given a call whose response was dropped and the retry that attached to it, when /metrics is scraped, then the gateway counts one new execution and one attached retry, and the other services count their part', async () => {
    const gateway = deployment.of('gateway')[0]!;
    const drop = droppableFetch();
    const first = await connectClient(gateway.url!, token, { fetch: drop.fetch });
    await target.control('hold', { match: 'PUT /config/ops-dropped' });
    const lost = first.client.callTool({ name: 'set_config', arguments: { name: 'ops-dropped', value: 'v1' } }).catch((error: unknown) => error);
    await eventually(async () => ((await target.effects()).requests.some((request) => request.path === '/config/ops-dropped') ? true : undefined), 30_000, 'the request at the target');
    drop.dropAll();
    await target.control('release', { match: 'PUT /config/ops-dropped' });
    await first.client.close();
    expect(await lost).toBeInstanceOf(Error);
    const second = await connectClient(gateway.url!, token);
    const retried = await second.client.callTool({ name: 'set_config', arguments: { name: 'ops-dropped', value: 'v1' } });
    const paid = await second.client.callTool({ name: 'send_payment', arguments: { payment_reference: 'ops-pay-0001', amount_cents: 1200, card_token: CARD_CANARY } });
    await second.client.close();
    expect(executionOf(retried)).toMatchObject({ attached: true });
    expect(executionOf(paid).attached).toBe(false);
    expect((await target.effects()).requests.filter((request) => request.path === '/config/ops-dropped' && request.effect)).toHaveLength(1);

    const gatewayMetrics = await eventually(async () => {
      const scraped = await scrape(gateway);
      return valueOf(scraped.samples, 'oncegate_tool_calls_total', { tool: 'set_config', match: 'new' }) >= 1 ? scraped : undefined;
    }, 30_000, 'the dropped call counted');
    expect(valueOf(gatewayMetrics.samples, 'oncegate_tool_calls_total', { tool: 'set_config', class: 'idempotent_write', match: 'attached' })).toBe(1);
    expect(valueOf(gatewayMetrics.samples, 'oncegate_tool_calls_total', { tool: 'set_config', class: 'idempotent_write', match: 'new' })).toBe(1);
    expect(valueOf(gatewayMetrics.samples, 'oncegate_tool_calls_total', { tool: 'send_payment', class: 'irreversible', match: 'new' })).toBe(1);
    expect(gatewayMetrics.samples.find((sample) => sample.family === 'oncegate_approvals_pending')?.value).toBe(0);
    expect(gatewayMetrics.samples.some((sample) => sample.family === 'oncegate_store_append_seconds' && sample.value > 0)).toBe(true);

    const dispatcher = await scrape(deployment.of('dispatcher-http')[0]!);
    expect(valueOf(dispatcher.samples, 'oncegate_dispatch_seconds', { channel: 'http', outcome: 'succeeded' })).toBe(2);
    const authorization = await scrape(deployment.of('authorization')[0]!);
    expect(valueOf(authorization.samples, 'oncegate_consumer_events_total', { consumer: 'authorization', result: 'handled' })).toBeGreaterThanOrEqual(2);
    expect(valueOf(authorization.samples, 'oncegate_consumer_events_total', { consumer: 'authorization', result: 'parked' })).toBe(0);
    expect(authorization.samples.find((sample) => sample.family === 'oncegate_parked_events' && sample.labels['consumer'] === 'authorization')?.value).toBe(0);
    expect(authorization.samples.find((sample) => sample.family === 'oncegate_consumer_lag_events' && sample.labels['consumer'] === 'authorization')?.value).toBeGreaterThanOrEqual(0);
    // Executions by where they went: the gateway accepts, authorization authorizes, the dispatcher dispatches and observes.
    expect(valueOf(gatewayMetrics.samples, 'oncegate_execution_events_total', { type: 'ExecutionAccepted' })).toBe(2);
    expect(valueOf(authorization.samples, 'oncegate_execution_events_total', { type: 'ExecutionAuthorized' })).toBe(2);
    expect(valueOf(dispatcher.samples, 'oncegate_execution_events_total', { type: 'Dispatched' })).toBe(2);
    expect(valueOf(dispatcher.samples, 'oncegate_execution_events_total', { type: 'OutcomeObserved' })).toBe(2);

    // Every process's exposition parses, its labels come from bounded sets, and no secret is in it.
    const everything: string[] = [];
    for (const process of deployment.processes) {
      const { text, samples } = await scrape(process);
      everything.push(text, (await get(process.operationsUrl!, '/readyz')).body);
      const values = samples.filter((sample) => sample.family.startsWith('oncegate_')).flatMap((sample) => Object.values(sample.labels));
      expect(values.filter((value) => /ex_[0-9A-Z]{26}|ogt_|oga_/.test(value)), process.service).toEqual([]);
    }
    const all = everything.join('\n');
    for (const secret of [CREDENTIAL_CANARY, CARD_CANARY]) for (const prefix of prefixesOf(secret)) expect(all.includes(prefix), prefix).toBe(false);
  }, 120_000);

  it('given a call carrying a traceparent, then one trace across the gateway, authorization, the dispatcher and result delivery reaches a real OpenTelemetry Collector, each span the child of the step before, and the target gets the attempt as parent', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const { client } = await connectClient(deployment.of('gateway')[0]!.url!, token);
    const result = await client.callTool({ name: 'send_payment', arguments: { payment_reference: 'ops-traced-01', amount_cents: 700, card_token: CARD_CANARY }, _meta: { traceparent: `00-${traceId}-${callerSpan}-01` } });
    await client.close();
    const executionId = executionOf(result).id;
    // Each process exports its spans on its own schedule: wait until every step's span has arrived.
    const steps = ['tools/call send_payment', 'authorization ExecutionAccepted', 'dispatcher-http ExecutionAuthorized', 'attempt http', 'result-delivery OutcomeObserved'];
    const spans = await eventually(() => {
      const ofTrace = collector.spans().filter((span) => span.traceId === traceId);
      return steps.every((step) => ofTrace.some((span) => span.name === step)) ? ofTrace : undefined;
    }, 30_000, 'the trace at the collector');
    const one = (name: string): ReceivedSpan => {
      const found = spans.filter((span) => span.name === name);
      expect(found.map((span) => span.name), name).toEqual([name]);
      return found[0]!;
    };
    const call = one('tools/call send_payment');
    const authorize = one('authorization ExecutionAccepted');
    const dispatch = one('dispatcher-http ExecutionAuthorized');
    const attempt = one('attempt http');
    const deliver = one('result-delivery OutcomeObserved');
    expect(call).toMatchObject({ service: 'oncegate-gateway', parentSpanId: callerSpan, attributes: { 'oncegate.tool': 'send_payment', 'oncegate.execution.id': executionId } });
    expect(authorize).toMatchObject({ service: 'oncegate-authorization', parentSpanId: call.spanId });
    expect(dispatch).toMatchObject({ service: 'oncegate-dispatcher-http', parentSpanId: authorize.spanId });
    expect(attempt).toMatchObject({ service: 'oncegate-dispatcher-http', parentSpanId: dispatch.spanId, attributes: { 'oncegate.outcome': 'succeeded' } });
    expect(deliver.service).toBe('oncegate-result-delivery');
    expect([dispatch.spanId, attempt.spanId]).toContain(deliver.parentSpanId);
    expect(new Set(spans.map((span) => span.service)).size).toBeGreaterThanOrEqual(4);
    // The target was told the attempt's span; the journal keeps the trace in the events' metadata.
    const [payment] = (await target.effects()).requests.filter((request) => request.idempotencyKey === executionId);
    expect(payment?.traceparent).toBe(`00-${traceId}-${attempt.spanId}-01`);
    const accepted = (await readJournal({ postgresUrl: storeUrl }, [`execution-${executionId}`])).find((event) => event.type === 'ExecutionAccepted');
    expect(accepted?.metadata['traceparent']).toBe(`00-${traceId}-${call.spanId}-01`);
    // No secret in any span the collector received.
    const everything = collector.bodies().join('\n');
    for (const secret of [CREDENTIAL_CANARY, CARD_CANARY]) for (const prefix of prefixesOf(secret)) expect(everything.includes(prefix), prefix).toBe(false);
  }, 120_000);

  it('given PostgreSQL stopped, then every process stays alive but says it is not ready because of the store, and is ready again once the server is back', async () => {
    await server.shutdown();
    try {
      for (const process of deployment.processes) {
        expect((await get(process.operationsUrl!, '/healthz')).status).toBe(200);
        const ready = await eventually(async () => {
          const answer = await get(process.operationsUrl!, '/readyz');
          return answer.status === 503 ? answer : undefined;
        }, 15_000, `${process.service} not ready`);
        expect(ready.body).toMatch(/^not ready store: /m);
        expect(ready.body).not.toMatch(/password/i);
      }
    } finally {
      await server.start();
    }
    for (const process of deployment.processes) {
      await eventually(async () => ((await get(process.operationsUrl!, '/readyz')).status === 200 ? true : undefined), 60_000, `${process.service} ready again`);
    }
  }, 120_000);
});
