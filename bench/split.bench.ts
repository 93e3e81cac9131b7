import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { Client as PgClient } from 'pg';
import { servedTogether, startLocalDeployment, startService, type LocalDeployment, type LocalService, type ServiceProcess } from '@oncegate/deploy-local';
import { startDemoTargetProcess } from '../test/support/demo-target-process';
import { freePort, gatewayFolder, startGatewayProcess, type GatewayFolder } from '../test/support/gateway-process';
import { queryOnce, startPostgres } from '../test/support/postgres';
import { allowedCores, coreLoad, coreTimes, groupCpuSeconds, pinToCores, tasksetAvailable, type CoreLoad } from './cpu';
import { drive, mcpClients, paced, procStats, type Call } from './gateway-support';
import { machineLine, mean, ms, percentile, printTable } from './table';

/**
 * The services apart (`oncegate serve`, deploy/local) on one PostgreSQL, against a target that takes 20 ms per
 * request, with 1, 2 and 3 HTTP dispatcher processes each capped at `dispatch_in_flight` attempts: does the work
 * spread (calls/s against one dispatcher), what does a call cost in CPU against the embedded gateway (`oncegate
 * start`, every step inline in one process) at the same concurrency on the same server, and what does the layout add
 * at concurrency 1? Each phase also tells how busy the machine's cores were and what a call cost the services,
 * PostgreSQL and the load generator (this process), so that a bound of the machine is told from a bound of the code:
 * the calls/s the cores could give at that CPU per call.
 *
 * `--pin` (util-linux's `taskset`) puts the load generator, PostgreSQL and the demo target on the first third of the
 * cores (at least one) and the services on the rest, so that the services' own scaling is seen without the load
 * generator competing for their cores.
 *
 * Then the same services grouped (`oncegate serve` with several services in one process, whose steps the gateway
 * decides in the commit that accepts a call): the gateway with authorization and result-delivery beside it and the
 * HTTP dispatchers apart (1 and 3, the same phases), and all four in one process, at concurrency 1.
 *
 * The services' CPU a call is compared with the embedded gateway's at the same rate (`--rate`, calls/s offered over
 * `--concurrency` sessions): a layout that serves fewer calls a second shares fewer commits, notifications and
 * background work among them, so each layout running at its own pace (the embedded gateway several times faster than
 * one dispatcher capped at `--cap` attempts) compares two loads, not two layouts. Both ways are printed.
 *
 * `--against <checkout> [--rounds N] [--loaded-calls N]`: this build against another's, in alternating rounds, each
 * with this checkout's embedded gateway as its reference: what the layout adds at concurrency 1, and the services'
 * CPU a call at `--rate` with one HTTP dispatcher (`concurrencyOneAgainst`).
 *
 * `npm run bench -- split [--calls N] [--concurrency N] [--cap N] [--rate N] [--delay MS] [--no-fsync] [--pin] [--against <checkout> [--rounds N] [--loaded-calls N]]`
 */
export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      calls: { type: 'string' },
      concurrency: { type: 'string' },
      cap: { type: 'string' },
      rate: { type: 'string' },
      delay: { type: 'string' },
      'no-fsync': { type: 'boolean' },
      pin: { type: 'boolean' },
      against: { type: 'string' },
      rounds: { type: 'string' },
      'loaded-calls': { type: 'string' },
    },
  });
  const calls = Number(values.calls ?? 600);
  const concurrency = Number(values.concurrency ?? 24);
  const cap = Number(values.cap ?? 1);
  // Below what one HTTP dispatcher at `dispatch_in_flight: 1` serves against the 20 ms target (about 30 calls/s).
  const rate = Number(values.rate ?? 25);
  const delayMs = Number(values.delay ?? 20);
  const loadAtStart = loadavg();
  const cores = coreTimes().length;
  const pinning = values.pin === true ? pinningOf(cores) : undefined;
  // Pinned first: PostgreSQL and the target, started by this process, inherit its cores; the services are moved.
  if (pinning !== undefined) pinToCores([process.pid], pinning.load);

  // Durable like a real deployment: fsync and synchronous commit on (`--no-fsync` turns them off, to see what the
  // layout does when the server's WAL flushes are not what bounds it).
  const durable = values['no-fsync'] !== true;
  const server = await startPostgres({ fast: !durable });
  const target = await startDemoTargetProcess();
  const admin = new PgClient({ connectionString: server.url() });
  await admin.connect();
  await admin.query('CREATE DATABASE bench_split');
  // The postmaster, whose children are the server's backends and workers: its pid is the first line of postmaster.pid.
  const { rows: [dataDirectory] } = await admin.query<{ data_directory: string }>('SHOW data_directory');
  const postmaster = Number(readFileSync(join(dataDirectory!.data_directory, 'postmaster.pid'), 'utf8').split('\n')[0]);
  await admin.end();
  if (pinning !== undefined) pinToCores([postmaster, target.pid], pinning.load);
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
  /** The cores each group was allowed on, as the kernel says, for the header: what "pinned" meant in fact. */
  const coresUsed = new Map<string, Set<string>>();
  const noteCores = (group: string, pids: readonly number[]) => {
    for (const pid of pids) coresUsed.set(group, (coresUsed.get(group) ?? new Set()).add(allowedCores(pid)));
  };
  /** Puts the serving processes on the services' cores (they start on this process's) and notes where each group runs. */
  const place = (servicePids: readonly number[]) => {
    if (pinning !== undefined) pinToCores(servicePids, pinning.services);
    noteCores('services', servicePids);
    noteCores('PostgreSQL', [postmaster]);
    noteCores('load generator', [process.pid]);
    noteCores('demo target', [target.pid]);
  };
  /** `drive`, with how busy the cores were and the CPU time of each group of processes meanwhile. */
  const measured = async (servicePids: readonly number[], driving: () => ReturnType<typeof drive>): Promise<MeasuredPhase> => {
    const groups = () => groupCpuSeconds({ services: servicePids, postgres: [postmaster], target: [target.pid] });
    const before = groups();
    const coresBefore = coreTimes();
    const clientBefore = process.cpuUsage();
    const result = await driving();
    const client = process.cpuUsage(clientBefore);
    const machine = coreLoad(coresBefore, coreTimes());
    const after = groups();
    const perCall = (seconds: number) => (seconds * 1000) / result.calls;
    const loadGenerator = (client.user + client.system) / 1e6;
    const cpu = {
      services: perCall(after.services - before.services),
      postgres: perCall(after.postgres - before.postgres),
      loadGenerator: perCall(loadGenerator),
      target: perCall(after.target - before.target),
      others: perCall(machine.busySeconds - (after.services - before.services) - (after.postgres - before.postgres) - loadGenerator - (after.target - before.target)),
    };
    return { ...result, machine, cpu };
  };
  const rows: Array<Record<string, string | number>> = [];
  const cpuRows: Array<Record<string, string | number>> = [];
  /**
   * The calls/s the cores allow at 100 % busy with this CPU per call of the services, PostgreSQL and the load
   * generator (the target and anyone else's work left out, so an upper bound); pinned, the lower of the two sides'.
   */
  const bound = ({ cpu }: MeasuredPhase): number =>
    pinning === undefined
      ? (cores * 1000) / (cpu.services + cpu.postgres + cpu.loadGenerator)
      : Math.min((pinning.services.length * 1000) / cpu.services, (pinning.load.length * 1000) / (cpu.postgres + cpu.loadGenerator));
  const cpuRow = (name: string, phase: MeasuredPhase) =>
    cpuRows.push({
      phase: name,
      'calls/s': (phase.calls / phase.seconds).toFixed(1),
      [`busy % (${cores} cores)`]: phase.machine.busyPercent.toFixed(0),
      'busy % per core': phase.machine.perCorePercent.map((value) => value.toFixed(0)).join(' / '),
      services: phase.cpu.services.toFixed(1),
      PostgreSQL: phase.cpu.postgres.toFixed(1),
      'load generator': phase.cpu.loadGenerator.toFixed(1),
      'the three': (phase.cpu.services + phase.cpu.postgres + phase.cpu.loadGenerator).toFixed(1),
      'demo target': phase.cpu.target.toFixed(1),
      others: phase.cpu.others.toFixed(1),
      'bound calls/s': bound(phase).toFixed(1),
    });
  /**
   * The transactions the server committed for the store's database (every statement outside a transaction is one):
   * how many round trips that write or read a call costs, whatever the machine's load. A backend reports its counts
   * when idle, at the latest 10 s after its last transaction, hence the pause before each reading.
   */
  const serverTransactions = async (): Promise<number> => {
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    const [row] = await queryOnce<{ n: string }>(server.url(), "SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = 'bench_split'");
    return Number(row!.n);
  };
  /**
   * `serverTransactions`, with what the processes spent meanwhile: its pause after a phase is the layout at rest, no
   * calls, only the background work (leases, renewals, sweeps) that the phases' CPU per call holds too.
   */
  const atRest = async (servicePids: readonly number[]): Promise<Rest> => {
    const groups = () => groupCpuSeconds({ services: servicePids, postgres: [postmaster] });
    const before = groups();
    const coresBefore = coreTimes();
    const started = process.hrtime.bigint();
    const transactions = await serverTransactions();
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const machine = coreLoad(coresBefore, coreTimes());
    const after = groups();
    return { transactions, seconds, machine, services: after.services - before.services, postgres: after.postgres - before.postgres };
  };
  const restRow = (rest: Rest) => ({
    seconds: rest.seconds.toFixed(1),
    [`busy % (${cores} cores)`]: rest.machine.busyPercent.toFixed(0),
    'services CPU ms/s': ((rest.services * 1000) / rest.seconds).toFixed(1),
    'PostgreSQL CPU ms/s': ((rest.postgres * 1000) / rest.seconds).toFixed(1),
  });
  /**
   * How many `Dispatched` events each dispatcher process has recorded, by its dispatcher id: how the group's
   * partitions spread the calls over the dispatchers (one execution's partition decides which dispatches it).
   */
  const dispatchedBy = async (): Promise<Map<string, number>> => {
    const counted = await queryOnce<{ id: string; n: string }>(storeUrl, "SELECT data->>'dispatcherId' AS id, count(*)::text AS n FROM oncegate.events WHERE type = 'Dispatched' GROUP BY 1");
    return new Map(counted.map((row) => [row.id, Number(row.n)]));
  };
  const restRows: Array<Record<string, string | number>> = [];
  /** Each service process's CPU in a loaded split phase, per call of the phase (all of them, not only those it handled). */
  const byProcess: Array<Record<string, string | number>> = [];
  let splitRest: Rest | undefined;
  const perCall: Array<Record<string, string | number>> = [];
  try {
    writeFileSync(folder.configFile, baseConfig);
    if (values.against !== undefined) {
      await concurrencyOneAgainst(resolve(values.against), Number(values.rounds ?? 3), Number(values.calls ?? 400), { folder, env, storeUrl, call }, { concurrency, calls: Number(values['loaded-calls'] ?? 600), rate });
      return;
    }
    // The embedded gateway: at concurrency 1, then at the split phases' concurrency for its CPU per call.
    const embedded = await startGatewayProcess(folder, env);
    place([embedded.child.pid!]);
    const embeddedClients = await mcpClients(embedded.url, concurrency, embedded.devToken);
    await drive(call(embeddedClients), 1, 30);
    const embeddedBefore = await serverTransactions();
    const single = await measured([embedded.child.pid!], () => drive(call(embeddedClients), 1, 150));
    const embeddedRest = await atRest([embedded.child.pid!]);
    perCall.push({ layout: 'embedded (oncegate start)', 'server transactions/call': (embeddedRest.transactions - embeddedBefore - 1) / single.calls });
    restRows.push({ layout: 'embedded (oncegate start)', ...restRow(embeddedRest) });
    cpuRow('embedded, concurrency 1', single);
    await drive(call(embeddedClients), concurrency, Math.min(100, calls / 4));
    const embeddedLoaded = await measured([embedded.child.pid!], () => drive(call(embeddedClients), concurrency, calls));
    cpuRow(`embedded, concurrency ${concurrency}`, embeddedLoaded);
    const embeddedPaced = await measured([embedded.child.pid!], () => drive(paced(call(embeddedClients), rate), concurrency, calls));
    cpuRow(`embedded, concurrency ${concurrency}, ${rate} calls/s offered`, embeddedPaced);
    await Promise.all(embeddedClients.map((client) => client.close()));
    await embedded.stop();

    let singleSplit: MeasuredPhase | undefined;
    let splitPaced: MeasuredPhase | undefined;
    let oneDispatcher = 0;
    const split: MeasuredPhase[] = [];
    for (const dispatchers of [1, 2, 3]) {
      const deployment: LocalDeployment = await startLocalDeployment({
        configFile: folder.configFile,
        cwd: folder.dir,
        env,
        gatewayPorts: [await freePort()],
        layout: { gateway: 1, authorization: 1, 'dispatcher-http': dispatchers, 'dispatcher-ssh': 0, 'result-delivery': 1, sealer: 0 },
      });
      try {
        const pids = deployment.processes.map((process) => process.pid);
        place(pids);
        const gateway = deployment.of('gateway')[0]!;
        const clients = await mcpClients(gateway.url!, concurrency, gateway.devToken);
        if (dispatchers === 1) {
          await drive(call(clients), 1, 30);
          const splitBefore = await serverTransactions();
          singleSplit = await measured(pids, () => drive(call(clients), 1, 150));
          splitRest = await atRest(pids);
          perCall.push({ layout: 'split (oncegate serve, one of each)', 'server transactions/call': (splitRest.transactions - splitBefore - 1) / singleSplit.calls });
          restRows.push({ layout: 'split (oncegate serve, one of each)', ...restRow(splitRest) });
          cpuRow('split, one of each, concurrency 1', singleSplit);
        }
        await drive(call(clients), concurrency, Math.min(100, calls / 4));
        const cpuBefore = deployment.processes.map((process) => procStats(process.pid).cpuSeconds);
        const dispatchedBefore = await dispatchedBy();
        const phase = await measured(pids, () => drive(call(clients), concurrency, calls));
        const cpu = deployment.processes.map((process, i) => procStats(process.pid).cpuSeconds - cpuBefore[i]!);
        const dispatched = [...(await dispatchedBy())].map(([id, count]) => count - (dispatchedBefore.get(id) ?? 0)).filter((count) => count > 0);
        dispatched.sort((a, b) => b - a);
        const dispatchedAll = dispatched.reduce((sum, count) => sum + count, 0);
        split.push(phase);
        const throughput = phase.calls / phase.seconds;
        if (dispatchers === 1) oneDispatcher = throughput;
        const dispatcherCpu = deployment.processes.flatMap((process, i) => (process.service === 'dispatcher-http' ? [cpu[i]!] : []));
        const perCallOf = (service: string) =>
          deployment.processes.flatMap((process, i) => (process.service === service ? [((cpu[i]! * 1000) / phase.calls).toFixed(2)] : [])).join(' / ');
        byProcess.push({
          'HTTP dispatchers': dispatchers,
          gateway: perCallOf('gateway'),
          authorization: perCallOf('authorization'),
          'result-delivery': perCallOf('result-delivery'),
          'each HTTP dispatcher': perCallOf('dispatcher-http'),
          'all services': phase.cpu.services.toFixed(1),
        });
        rows.push({
          'HTTP dispatchers': dispatchers,
          'calls/s': throughput.toFixed(1),
          'vs 1 dispatcher': `${(throughput / oneDispatcher).toFixed(2)}×`,
          'p50 ms': ms(percentile(phase.samples, 50)),
          'p99 ms': ms(percentile(phase.samples, 99)),
          failed: phase.failed,
          'CPU ms/call (all services)': phase.cpu.services.toFixed(1),
          'dispatcher CPU s each': dispatcherCpu.map((value) => value.toFixed(1)).join(' / '),
          'calls dispatched by each': dispatched.join(' / '),
          'the busiest one\'s share': `${((100 * (dispatched[0] ?? 0)) / Math.max(1, dispatchedAll)).toFixed(1)} %`,
        });
        cpuRow(`split, ${dispatchers} HTTP dispatcher${dispatchers === 1 ? '' : 's'}, concurrency ${concurrency}`, phase);
        if (dispatchers === 1) {
          splitPaced = await measured(pids, () => drive(paced(call(clients), rate), concurrency, calls));
          cpuRow(`split, 1 HTTP dispatcher, concurrency ${concurrency}, ${rate} calls/s offered`, splitPaced);
        }
        await Promise.all(clients.map((client) => client.close()));
      } finally {
        await deployment.stop();
      }
    }

    // The same services grouped: each layout's phases on processes of its own, as deploy/local starts them.
    const grouped: Array<{ layout: string; single: MeasuredPhase; loaded: MeasuredPhase[] }> = [];
    for (const { layout, together, apart } of GROUPED_LAYOUTS) {
      const loaded: MeasuredPhase[] = [];
      let single: MeasuredPhase | undefined;
      for (const dispatchers of apart) {
        const processes = await startGrouped(together, dispatchers, { configFile: folder.configFile, cwd: folder.dir, env });
        try {
          const pids = processes.map((process) => process.pid);
          place(pids);
          const clients = await mcpClients(processes[0]!.url!, concurrency, processes[0]!.devToken);
          if (single === undefined) {
            await drive(call(clients), 1, 30);
            single = await measured(pids, () => drive(call(clients), 1, 150));
            cpuRow(`${layout}, concurrency 1`, single);
          }
          await drive(call(clients), concurrency, Math.min(100, calls / 4));
          const phase = await measured(pids, () => drive(call(clients), concurrency, calls));
          loaded.push(phase);
          cpuRow(`${layout}${apart.length > 1 ? `, ${dispatchers} HTTP dispatcher${dispatchers === 1 ? '' : 's'} apart` : ''}, concurrency ${concurrency}`, phase);
          await Promise.all(clients.map((client) => client.close()));
        } finally {
          for (const process of processes) await process.stop();
        }
      }
      grouped.push({ layout, single: single!, loaded });
    }
    const loadAtEnd = loadavg();
    const averages = (load: number[]) => load.map((value) => value.toFixed(2)).join(' / ');
    process.stdout.write(
      `\nmachine: ${machineLine()}, ${cores} cores, load average (1 / 5 / 15 min) ${averages(loadAtStart)} at start, ${averages(loadAtEnd)} at end; ` +
        `PostgreSQL 15 with fsync ${durable ? 'on' : 'OFF'}, on this machine; ` +
        `target delay ${delayMs} ms per request; ${concurrency} MCP sessions; dispatch_in_flight ${cap} per dispatcher process; ` +
        `one gateway, authorization and result-delivery process each\n` +
        `cores: ${pinning === undefined ? 'not pinned' : `pinned with taskset: load generator, PostgreSQL and demo target on ${pinning.load.join(',')}, services on ${pinning.services.join(',')}`}; ` +
        `allowed, as /proc says: ${[...coresUsed].map(([group, lists]) => `${group} ${[...lists].join(' and ')}`).join(', ')}\n`,
    );
    printTable(`calls/s by HTTP dispatcher processes (${calls} distinct calls each)`, rows);
    printTable('CPU ms a call of each service process in those phases (over every call of the phase, whichever process handled it)', byProcess);
    printTable(
      `where the CPU went (CPU ms per call of each group; "the three": services, PostgreSQL and load generator; "others": the rest of the machine's busy time, ` +
        `anyone else's work; bound: the calls/s the ${pinning === undefined ? `${cores} cores` : 'pinned cores of each side'} allow at 100 % busy at the three's CPU per call)`,
      cpuRows,
    );
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
    printTable(
      'services grouped in a process (oncegate serve with several): concurrency 1 over the embedded gateway, and the loaded phases',
      grouped.map(({ layout, single: one, loaded }) => ({
        layout,
        'p50 ms at 1': ms(p50(one.samples)),
        'added over embedded': ms(p50(one.samples) - p50(single.samples)),
        'services CPU ms/call at 1': one.cpu.services.toFixed(1),
        [`calls/s at ${concurrency}`]: loaded.map((phase) => (phase.calls / phase.seconds).toFixed(1)).join(' / '),
        [`services CPU ms/call at ${concurrency}`]: loaded.map((phase) => phase.cpu.services.toFixed(1)).join(' / '),
        [`p50 ms at ${concurrency}`]: loaded.map((phase) => ms(p50(phase.samples))).join(' / '),
      })),
    );
    printTable('at rest: the pause after the concurrency-1 calls, no calls (the background work every phase holds too)', restRows);
    printTable('concurrency 1: what a call costs the server (transactions committed, with what the services do in the background meanwhile)', perCall.map((row) => ({ ...row, 'server transactions/call': Number(row['server transactions/call']).toFixed(1) })));
    process.stdout.write(`\n${aims({ cores, concurrency, rate, cap, pinning, embeddedLoaded, embeddedPaced, embeddedSingle: single, splitSingle: singleSplit!, split, splitPaced: splitPaced!, bound, embeddedRest, splitRest: splitRest! })}`);
  } finally {
    await target.stop();
    await server.stop();
    folder.dispose();
  }
}

/**
 * The grouped layouts: the services one process hosts (`oncegate serve a b c`), and the HTTP dispatcher processes
 * beside it in each of its phases (0: none apart).
 */
const GROUPED_LAYOUTS = [
  { layout: 'gateway + authorization + result-delivery, dispatchers apart', together: ['gateway', 'authorization', 'result-delivery'], apart: [1, 3] },
  { layout: 'all four in one process', together: ['gateway', 'authorization', 'dispatcher-http', 'result-delivery'], apart: [0] },
] satisfies ReadonlyArray<{ layout: string; together: readonly LocalService[]; apart: readonly number[] }>;

/** One process hosting `together` (the gateway first in the list), and `dispatchers` HTTP dispatcher processes. */
async function startGrouped(together: readonly LocalService[], dispatchers: number, options: { configFile: string; cwd: string; env: NodeJS.ProcessEnv }): Promise<ServiceProcess[]> {
  const front = await startService(servedTogether(together), { ...options, port: await freePort() });
  const started = [front];
  try {
    for (let i = 0; i < dispatchers; i += 1) started.push(await startService('dispatcher-http', options));
  } catch (error) {
    for (const process of started) await process.stop().catch(() => undefined);
    throw error;
  }
  return started;
}

interface MeasuredPhase extends Awaited<ReturnType<typeof drive>> {
  readonly machine: CoreLoad;
  /** CPU ms per call of each group; `others`: the machine's busy time beyond this benchmark's processes. */
  readonly cpu: { readonly services: number; readonly postgres: number; readonly loadGenerator: number; readonly target: number; readonly others: number };
}

/** A layout at rest: its transactions count at the end, and the CPU seconds its processes spent. */
interface Rest {
  readonly transactions: number;
  readonly seconds: number;
  readonly machine: CoreLoad;
  readonly services: number;
  readonly postgres: number;
}

interface Pinning {
  /** The load generator's, PostgreSQL's and the demo target's cores. */
  readonly load: number[];
  readonly services: number[];
}

/** A third of the cores (at least one) for the load side, the rest for the services. */
function pinningOf(cores: number): Pinning {
  if (!tasksetAvailable()) throw new Error('--pin needs taskset (util-linux), which is not installed here');
  if (cores < 2) throw new Error(`--pin needs at least 2 cores to give the services their own; this machine has ${cores}`);
  const load = Math.max(1, Math.floor(cores / 3));
  return { load: Array.from({ length: load }, (_, i) => i), services: Array.from({ length: cores - load }, (_, i) => load + i) };
}

/** Each aim of the layout with its result, and where the machine's cores are what stands in the way, by how much. */
function aims(run: {
  readonly cores: number;
  readonly concurrency: number;
  readonly rate: number;
  readonly cap: number;
  readonly pinning: Pinning | undefined;
  readonly embeddedSingle: MeasuredPhase;
  readonly embeddedLoaded: MeasuredPhase;
  readonly embeddedPaced: MeasuredPhase;
  readonly splitSingle: MeasuredPhase;
  readonly split: readonly MeasuredPhase[];
  readonly splitPaced: MeasuredPhase;
  readonly bound: (phase: MeasuredPhase) => number;
  readonly embeddedRest: Rest;
  readonly splitRest: Rest;
}): string {
  const verdict = (met: boolean) => (met ? 'met' : 'missed');
  const rate = (phase: MeasuredPhase) => phase.calls / phase.seconds;
  const three = (phase: MeasuredPhase) => phase.cpu.services + phase.cpu.postgres + phase.cpu.loadGenerator;
  const restPerSecond = (rest: Rest) => (rest.services * 1000) / rest.seconds;

  const atRate = run.splitPaced.cpu.services / run.embeddedPaced.cpu.services;
  // Paced, a layout that cannot keep up runs at its own pace after all: then the rates differ and the verdict says so.
  const behind = [run.embeddedPaced, run.splitPaced].filter((phase) => rate(phase) < 0.95 * run.rate);
  const embeddedCpu = run.embeddedLoaded.cpu.services;
  const ratios = run.split.map((phase) => phase.cpu.services / embeddedCpu);
  const cpuAim =
    `Aim — service CPU per call (all service processes) at most 3× the embedded gateway's, both at ${run.rate} calls/s offered over ${run.concurrency} sessions on the same PostgreSQL: ` +
    `${behind.length > 0 ? 'not measured' : verdict(atRate <= 3)} (${run.splitPaced.cpu.services.toFixed(1)} ms with one HTTP dispatcher at ${rate(run.splitPaced).toFixed(1)} calls/s against ` +
    `${run.embeddedPaced.cpu.services.toFixed(1)} ms at ${rate(run.embeddedPaced).toFixed(1)} calls/s = ${atRate.toFixed(2)}×` +
    `${behind.length > 0 ? `; a layout did not keep up with the rate offered, so the two were not at the same rate: lower --rate` : ''}). ` +
    `Each at its own pace at concurrency ${run.concurrency} (the embedded gateway at ${rate(run.embeddedLoaded).toFixed(1)} calls/s, ${embeddedCpu.toFixed(1)} ms; the split with dispatch_in_flight ${run.cap} per dispatcher): ` +
    run.split.map((phase, i) => `${phase.cpu.services.toFixed(1)} ms = ${ratios[i]!.toFixed(2)}× at ${rate(phase).toFixed(1)} calls/s with ${i + 1} HTTP dispatcher${i === 0 ? '' : 's'}`).join(', ') +
    `; at concurrency 1: ${run.splitSingle.cpu.services.toFixed(1)} ms against ${run.embeddedSingle.cpu.services.toFixed(1)} ms = ${(run.splitSingle.cpu.services / run.embeddedSingle.cpu.services).toFixed(2)}×. ` +
    `At rest the split's services spend ${restPerSecond(run.splitRest).toFixed(1)} ms of CPU a second, the embedded gateway ${restPerSecond(run.embeddedRest).toFixed(1)} ms: ` +
    `at the calls/s of each split phase that is ${run.split.map((phase) => (restPerSecond(run.splitRest) / rate(phase)).toFixed(1)).join(' / ')} ms of its CPU per call\n`;

  const [one, , threeDispatchers] = run.split as [MeasuredPhase, MeasuredPhase, MeasuredPhase];
  const wanted = 2.5 * rate(one);
  const limit = run.bound(threeDispatchers);
  const needed = (wanted * three(threeDispatchers)) / 1000;
  // Anyone else's work on the machine meanwhile: the cores it took were not the bench's to use.
  const othersCores = (threeDispatchers.cpu.others * rate(threeDispatchers)) / 1000;
  const needs = run.pinning === undefined
    ? `needs ${needed.toFixed(2)} cores at this CPU per call, the machine has ${run.cores}`
    : `needs ${((wanted * threeDispatchers.cpu.services) / 1000).toFixed(2)} cores for the services (pinned to ${run.pinning.services.length}) and ` +
      `${((wanted * (threeDispatchers.cpu.postgres + threeDispatchers.cpu.loadGenerator)) / 1000).toFixed(2)} for PostgreSQL and the load generator (pinned to ${run.pinning.load.length}) at this CPU per call`;
  const reach =
    wanted > limit
      ? `out of reach on ${run.cores} cores: ${needs}`
      : needed > run.cores - othersCores
        ? `within what the ${run.cores} cores allow (${((wanted / limit) * 100).toFixed(0)} % of it: ${needs}), but not in this run: anyone else's work left the bench ${(run.cores - othersCores).toFixed(2)} cores`
        : `within reach of the cores (${((wanted / limit) * 100).toFixed(0)} % of what they allow: ${needs}): what holds it back is not the cores alone`;
  const scalingAim =
    `Aim — three HTTP dispatchers at least 2.5× one's calls/s: ${verdict(rate(threeDispatchers) >= wanted)} (${(rate(threeDispatchers) / rate(one)).toFixed(2)}×: ` +
    `${rate(threeDispatchers).toFixed(1)} against ${rate(one).toFixed(1)} calls/s; 2.5× is ${wanted.toFixed(1)} calls/s). ` +
    `With three dispatchers a call cost ${three(threeDispatchers).toFixed(1)} ms of CPU (services ${threeDispatchers.cpu.services.toFixed(1)}, ` +
    `PostgreSQL ${threeDispatchers.cpu.postgres.toFixed(1)}, load generator ${threeDispatchers.cpu.loadGenerator.toFixed(1)}), the cores were ` +
    `${threeDispatchers.machine.busyPercent.toFixed(0)} % busy (anyone else's work ${othersCores.toFixed(2)} cores' worth of it), ` +
    `and at that CPU per call they allow at most ${limit.toFixed(1)} calls/s: ${reach}\n`;

  const added = percentile(run.splitSingle.samples, 50) - percentile(run.embeddedSingle.samples, 50);
  const latencyAim =
    `Aim — the split layout adds at most 5 ms p50 at concurrency 1: ${verdict(added <= 5)} (+${ms(added)} ms; the cores were ` +
    `${run.embeddedSingle.machine.busyPercent.toFixed(0)} % busy with the embedded gateway and ${run.splitSingle.machine.busyPercent.toFixed(0)} % with the split layout, ` +
    `whose call cost ${three(run.splitSingle).toFixed(1)} ms of CPU against the embedded one's ${three(run.embeddedSingle).toFixed(1)} ms)\n`;
  return cpuAim + scalingAim + latencyAim;
}

/**
 * `--against <checkout>`: what the split layout adds at concurrency 1, this checkout's build against another's (built,
 * its packages installed), in alternating rounds on the same server and target, each round with this checkout's
 * embedded gateway as the reference. Each layout's call also shows its hops: the median time from one service's
 * event to the next one's (`recordedAt`, taken as each commit starts), read from the journal.
 */
async function concurrencyOneAgainst(
  other: string,
  rounds: number,
  calls: number,
  setup: { folder: GatewayFolder; env: NodeJS.ProcessEnv; storeUrl: string; call: (clients: Awaited<ReturnType<typeof mcpClients>>) => Call },
  loaded: { concurrency: number; calls: number; rate: number },
): Promise<void> {
  for (const needed of ['bin/oncegate.mjs', 'dist/apps/authorization/main.js', 'dist/apps/dispatcher-http/main.js', 'dist/apps/result-delivery/main.js']) {
    if (!existsSync(join(other, needed))) throw new Error(`split --against: ${join(other, needed)} is missing (a checkout with its packages installed and \`npm run build\` run in it)`);
  }
  const { folder, env, storeUrl, call } = setup;
  const builds = [
    { name: 'this checkout', checkout: undefined },
    { name: other, checkout: other },
  ];
  const hopsOf = async (after: number): Promise<Map<string, number>> => {
    const rows = await queryOnce<{ stream_id: string; type: string; recorded_at: string }>(
      storeUrl,
      "SELECT stream_id, type, recorded_at FROM oncegate.events WHERE position > $1 AND stream_id LIKE 'execution-%' ORDER BY position",
      [after],
    );
    const last = new Map<string, { type: string; at: number }>();
    const gaps = new Map<string, number[]>();
    for (const row of rows) {
      const at = Date.parse(row.recorded_at);
      const before = last.get(row.stream_id);
      if (before !== undefined) {
        const hop = `${before.type}→${row.type}`;
        const seen = gaps.get(hop) ?? [];
        seen.push(at - before.at);
        gaps.set(hop, seen);
      }
      last.set(row.stream_id, { type: row.type, at });
    }
    return new Map([...gaps].map(([hop, values]) => [hop, percentile(values.sort((a, b) => a - b), 50)]));
  };
  const head = async (): Promise<number> => Number((await queryOnce<{ head: string }>(storeUrl, 'SELECT coalesce(max(position), 0)::text AS head FROM oncegate.events'))[0]!.head);
  const rows: Array<Record<string, string | number>> = [];
  const added = new Map<string, number[]>(builds.map((build) => [build.name, []]));
  /**
   * Each process's CPU ms a call over the loaded phase (`loaded.calls` offered at `loaded.rate` calls/s over
   * `loaded.concurrency` sessions: every layout at the same rate), by service, and the rate it kept.
   */
  const loadedCpu = async (clients: Awaited<ReturnType<typeof mcpClients>>, processes: ReadonlyArray<{ service: string; pid: number }>) => {
    await drive(call(clients), loaded.concurrency, Math.min(100, loaded.calls / 4));
    const before = processes.map((process) => procStats(process.pid).cpuSeconds);
    const phase = await drive(paced(call(clients), loaded.rate), loaded.concurrency, loaded.calls);
    const perService = new Map<string, number>();
    processes.forEach((process, i) => perService.set(process.service, (perService.get(process.service) ?? 0) + ((procStats(process.pid).cpuSeconds - before[i]!) * 1000) / phase.calls));
    return { perService, total: [...perService.values()].reduce((sum, value) => sum + value, 0), failed: phase.failed, rate: phase.calls / phase.seconds };
  };
  const cpuRows: Array<Record<string, string | number>> = [];
  const ratios = new Map<string, number[]>(builds.map((build) => [build.name, []]));
  for (let round = 1; round <= rounds; round += 1) {
    const embedded = await startGatewayProcess(folder, env);
    const embeddedClients = await mcpClients(embedded.url, loaded.concurrency, embedded.devToken);
    await drive(call(embeddedClients), 1, 30);
    const reference = await drive(call(embeddedClients), 1, calls);
    const embeddedCpu = await loadedCpu(embeddedClients, [{ service: 'embedded', pid: embedded.child.pid! }]);
    cpuRows.push({ round, layout: 'embedded (this checkout)', 'calls/s kept': embeddedCpu.rate.toFixed(1), 'services CPU ms/call': embeddedCpu.total.toFixed(2), 'by process': '', 'vs embedded': '', failed: embeddedCpu.failed });
    await Promise.all(embeddedClients.map((client) => client.close()));
    await embedded.stop();
    rows.push({ round, layout: 'embedded (this checkout)', 'p50 ms': ms(percentile(reference.samples, 50)), 'mean ms': ms(mean(reference.samples)), 'added p50 ms': '', hops: '' });
    // Alternating which build goes first, so that neither always follows the embedded gateway.
    for (const build of round % 2 === 1 ? builds : [...builds].reverse()) {
      const deployment = await startLocalDeployment({
        configFile: folder.configFile,
        cwd: folder.dir,
        env,
        gatewayPorts: [await freePort()],
        layout: { gateway: 1, authorization: 1, 'dispatcher-http': 1, 'dispatcher-ssh': 0, 'result-delivery': 1, sealer: 0 },
        ...(build.checkout === undefined ? {} : { checkout: build.checkout }),
      });
      try {
        const gateway = deployment.of('gateway')[0]!;
        const clients = await mcpClients(gateway.url!, loaded.concurrency, gateway.devToken);
        await drive(call(clients), 1, 30);
        const from = await head();
        const split = await drive(call(clients), 1, calls);
        // The hops of the concurrency-1 calls only, before the loaded phase queues behind the one dispatcher.
        const hops = await hopsOf(from);
        const splitCpu = await loadedCpu(clients, deployment.processes);
        ratios.get(build.name)!.push(splitCpu.total / embeddedCpu.total);
        cpuRows.push({
          round,
          layout: `split, ${build.name}`,
          'calls/s kept': splitCpu.rate.toFixed(1),
          'services CPU ms/call': splitCpu.total.toFixed(2),
          'by process': [...splitCpu.perService].sort(([a], [b]) => a.localeCompare(b)).map(([service, value]) => `${service} ${value.toFixed(2)}`).join(', '),
          'vs embedded': `${(splitCpu.total / embeddedCpu.total).toFixed(2)}×`,
          failed: splitCpu.failed,
        });
        await Promise.all(clients.map((client) => client.close()));
        const more = percentile(split.samples, 50) - percentile(reference.samples, 50);
        added.get(build.name)!.push(more);
        rows.push({
          round,
          layout: `split, ${build.name}`,
          'p50 ms': ms(percentile(split.samples, 50)),
          'mean ms': ms(mean(split.samples)),
          'added p50 ms': more.toFixed(2),
          hops: ['ExecutionAccepted→ExecutionAuthorized', 'ExecutionAuthorized→Dispatched', 'Dispatched→OutcomeObserved'].map((hop) => `${hops.get(hop) ?? '-'}`).join(' / '),
        });
      } finally {
        await deployment.stop();
      }
    }
  }
  console.log(`\nSplit layout at concurrency 1, this checkout against ${other} — ${machineLine()}, ${calls} calls a layout a round`);
  printTable('each round: p50 and mean, what the split adds over the embedded gateway of the round, the hops (ms: accepted→authorized / authorized→dispatched / dispatched→outcome, medians of recordedAt)', rows);
  const median = (values: number[]) => percentile([...values].sort((a, b) => a - b), 50);
  printTable(
    `each round, loaded: services' CPU a call (each process's, from /proc) over ${loaded.calls} calls offered at ${loaded.rate} calls/s over ${loaded.concurrency} sessions, one HTTP dispatcher, against the round's embedded gateway at the same rate`,
    cpuRows,
  );
  printTable(
    'over the rounds',
    builds.map((build) => ({
      build: build.name,
      'median added p50 ms': median(added.get(build.name)!).toFixed(2),
      'each round': added.get(build.name)!.map((value) => value.toFixed(2)).join(' / '),
      [`median CPU vs embedded at ${loaded.rate} calls/s`]: `${median(ratios.get(build.name)!).toFixed(2)}×`,
      'each round ': ratios.get(build.name)!.map((value) => `${value.toFixed(2)}×`).join(' / '),
    })),
  );
}

