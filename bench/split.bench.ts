import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Client as PgClient } from 'pg';
import { startLocalDeployment, type LocalDeployment } from '@oncegate/deploy-local';
import { startDemoTargetProcess } from '../test/support/demo-target-process';
import { freePort, gatewayFolder, startGatewayProcess } from '../test/support/gateway-process';
import { startPostgres } from '../test/support/postgres';
import { drive, mcpClients, procStats, type Call } from './gateway-support';
import { machineLine, ms, percentile, printTable } from './table';

/**
 * The services apart (`oncegate serve`, deploy/local) on one PostgreSQL, against a target that takes 20 ms per
 * request, with 1, 2 and 3 HTTP dispatcher processes each capped at `dispatch_in_flight` attempts: does the work
 * spread (calls/s against one dispatcher), and what does the layout add at concurrency 1 over the embedded gateway
 * (`oncegate start`, every step inline in one process) on the same server?
 *
 * `npm run bench -- split [--calls N] [--concurrency N] [--cap N] [--delay MS] [--no-fsync]`
 */
export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { calls: { type: 'string' }, concurrency: { type: 'string' }, cap: { type: 'string' }, delay: { type: 'string' }, 'no-fsync': { type: 'boolean' } },
  });
  const calls = Number(values.calls ?? 600);
  const concurrency = Number(values.concurrency ?? 24);
  const cap = Number(values.cap ?? 1);
  const delayMs = Number(values.delay ?? 20);

  // Durable like a real deployment: fsync and synchronous commit on (`--no-fsync` turns them off, to see what the
  // layout does when the server's WAL flushes are not what bounds it).
  const durable = values['no-fsync'] !== true;
  const server = await startPostgres({ fast: !durable });
  const target = await startDemoTargetProcess();
  const admin = new PgClient({ connectionString: server.url() });
  await admin.connect();
  await admin.query('CREATE DATABASE bench_split');
  await admin.end();
  const storeUrl = server.url('bench_split');
  const folder = await gatewayFolder(target.url, { call_wait: '60s', seal_every: '0s' }, [], { store: { postgresUrl: storeUrl, urlFromEnv: true } });
  appendFileSync(folder.configFile, `instance_lease: 3s\ndispatch_in_flight: ${cap}\nlog_level: warn\n`);
  const baseConfig = readFileSync(folder.configFile, 'utf8');
  const env = { ONCEGATE_STORE_URL: storeUrl };
  await target.control('behave', { match: 'PUT *', action: 'delay', ms: delayMs });
  const call = (clients: Awaited<ReturnType<typeof mcpClients>>): Call => async (worker, value) => {
    const result = await clients[worker % clients.length]!.callTool({ name: 'set_config', arguments: { name: 'bench-split', value } });
    return result.isError !== true;
  };
  const rows: Array<Record<string, string | number>> = [];
  const load = loadavg()[0]!;
  /**
   * The transactions the server committed for the store's database (every statement outside a transaction is one):
   * how many round trips that write or read a call costs, whatever the machine's load. A backend reports its counts
   * when idle, at the latest 10 s after its last transaction, hence the pause before each reading.
   */
  const serverTransactions = async (): Promise<number> => {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const client = new PgClient({ connectionString: server.url() });
    await client.connect();
    try {
      const { rows: [row] } = await client.query<{ n: string }>("SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = 'bench_split'");
      return Number(row!.n);
    } finally {
      await client.end();
    }
  };
  const perCall: Array<Record<string, string | number>> = [];
  try {
    // Concurrency 1: the embedded gateway, then the split layout with one of each service.
    writeFileSync(folder.configFile, baseConfig);
    const embedded = await startGatewayProcess(folder, env);
    const embeddedClients = await mcpClients(embedded.url, 1, embedded.devToken);
    await drive(call(embeddedClients), 1, 30);
    const embeddedBefore = await serverTransactions();
    const single = await drive(call(embeddedClients), 1, 150);
    perCall.push({ layout: 'embedded (oncegate start)', 'server transactions/call': ((await serverTransactions()) - embeddedBefore - 1) / single.calls });
    await Promise.all(embeddedClients.map((client) => client.close()));
    await embedded.stop();

    let singleSplit: Awaited<ReturnType<typeof drive>> | undefined;
    let oneDispatcher = 0;
    for (const dispatchers of [1, 2, 3]) {
      const deployment: LocalDeployment = await startLocalDeployment({
        configFile: folder.configFile,
        cwd: folder.dir,
        env,
        gatewayPorts: [await freePort()],
        layout: { gateway: 1, authorization: 1, 'dispatcher-http': dispatchers, 'dispatcher-ssh': 0, 'result-delivery': 1, sealer: 0 },
      });
      try {
        const gateway = deployment.of('gateway')[0]!;
        const clients = await mcpClients(gateway.url!, concurrency, gateway.devToken);
        if (dispatchers === 1) {
          await drive(call(clients), 1, 30);
          const splitBefore = await serverTransactions();
          singleSplit = await drive(call(clients), 1, 150);
          perCall.push({ layout: 'split (oncegate serve, one of each)', 'server transactions/call': ((await serverTransactions()) - splitBefore - 1) / singleSplit.calls });
        }
        await drive(call(clients), concurrency, Math.min(100, calls / 4));
        const cpuBefore = deployment.processes.map((process) => procStats(process.pid).cpuSeconds);
        const measured = await drive(call(clients), concurrency, calls);
        const cpu = deployment.processes.map((process, i) => procStats(process.pid).cpuSeconds - cpuBefore[i]!);
        const throughput = measured.calls / measured.seconds;
        if (dispatchers === 1) oneDispatcher = throughput;
        const dispatcherCpu = deployment.processes.flatMap((process, i) => (process.service === 'dispatcher-http' ? [cpu[i]!] : []));
        rows.push({
          'HTTP dispatchers': dispatchers,
          'calls/s': throughput.toFixed(1),
          'vs 1 dispatcher': `${(throughput / oneDispatcher).toFixed(2)}×`,
          'p50 ms': ms(percentile(measured.samples, 50)),
          'p99 ms': ms(percentile(measured.samples, 99)),
          failed: measured.failed,
          'CPU ms/call (all services)': ((cpu.reduce((sum, value) => sum + value, 0) * 1000) / measured.calls).toFixed(1),
          'dispatcher CPU s each': dispatcherCpu.map((value) => value.toFixed(1)).join(' / '),
        });
        await Promise.all(clients.map((client) => client.close()));
      } finally {
        await deployment.stop();
      }
    }
    process.stdout.write(
      `\nmachine: ${machineLine()}, ${cpus().length} CPUs, load average ${load.toFixed(2)} at start; PostgreSQL 15 with fsync ${durable ? 'on' : 'OFF'}, on this machine; ` +
        `target delay ${delayMs} ms per request; ${concurrency} MCP sessions; dispatch_in_flight ${cap} per dispatcher process; ` +
        `one gateway, authorization and result-delivery process each\n`,
    );
    printTable(`calls/s by HTTP dispatcher processes (${calls} distinct calls each)`, rows);
    const p50 = (samples: readonly number[]) => percentile(samples, 50);
    printTable('concurrency 1: what the split layout adds over the embedded gateway (same PostgreSQL, same target)', [
      { layout: 'embedded (oncegate start)', 'p50 ms': ms(p50(single.samples)), 'p99 ms': ms(percentile(single.samples, 99)) },
      {
        layout: 'split (oncegate serve, one of each)',
        'p50 ms': ms(p50(singleSplit!.samples)),
        'p99 ms': ms(percentile(singleSplit!.samples, 99)),
      },
      { layout: 'added by the split layout', 'p50 ms': ms(p50(singleSplit!.samples) - p50(single.samples)), 'p99 ms': '' },
    ]);
    printTable('concurrency 1: what a call costs the server (transactions committed, with what the services do in the background meanwhile)', perCall.map((row) => ({ ...row, 'server transactions/call': Number(row['server transactions/call']).toFixed(1) })));
    process.stdout.write('\naims: 3 dispatchers at least 2.5× one; the split layout adds at most 5 ms p50 at concurrency 1\n');
  } finally {
    await target.stop();
    await server.stop();
    folder.dispose();
  }
}
