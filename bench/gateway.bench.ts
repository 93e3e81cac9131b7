import { mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ALLOCATION_TRACE,
  allocatedPerCall,
  gcPausePerCall,
  promotedPerCall,
  countAllocation,
  directHttp,
  fdatasyncFloor,
  gatewayYaml,
  mcpCall,
  modernMcpClients,
  mcpClients,
  mergePhases,
  mib,
  phase,
  spawnDemoTarget,
  spawnServer,
  startBenchGateway,
  startGatewayProcess,
  printCallStages,
  readCallStages,
  ASYNC_RESOURCES_PRELOAD,
  countAsyncResources,
  countCensus,
  CALL_CENSUS_PRELOAD,
  printAsyncResources,
  printCensus,
  printThreadCpu,
  ROOT,
  type Call,
  type CallStages,
  type Phase,
  type Server,
} from './gateway-support';
import { runAgainst } from './gateway-against.bench';
import { runInFlight } from './gateway-in-flight.bench';
import { runBigJournal } from './gateway-journal.bench';
import { startCollector } from '../test/support/otel-collector';
import { machineLine, ms, percentile, printTable, rate } from './table';

/**
 * `tools/call` through the gateway against the same HTTP request sent directly, against a plain pass-through MCP
 * proxy on the same SDK, and against that proxy writing each call to the event store as the gateway's pipeline does
 * (two fsync'd commits on the call's path, the delivery after it; nothing else: the floor any gateway on this store
 * stands on), at concurrency 1 and 32.
 *
 * Every server runs in its own child process (target, proxy, gateway via `bin/oncegate.mjs start`), so the bench
 * process is only the load generator and each server's peak RSS (VmHWM, reset per phase through clear_refs) and
 * CPU time are its own. Every call carries a new value, so each one is a new execution the gateway journals and
 * dispatches, never a replay of a stored result.
 *
 * Two more runs of the same bench, chosen by an option: `--journal <executions>` (the gateway on an empty journal
 * against one already holding that many completed executions: gateway-journal.bench.ts) and `--in-flight <calls>`
 * (that many calls waiting inside the gateway while the target holds its answers: gateway-in-flight.bench.ts).
 */

/** The pass-through proxy with a journal: what two fsync'd commits per call cost on this store, and no more. */
const FLOOR = 'proxy + two durable commits (floor)';

/**
 * How long a server is left after its turn before its CPU and peak are read and the next path starts: longer than
 * the gateway's executions index waits to gather a batch (250 ms), so the work a server defers past its answers is
 * its own and done before anyone else is measured.
 */
const SETTLE_MS = 400;

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      calls: { type: 'string', default: '2000' },
      'calls-c32': { type: 'string', default: '5000' },
      warmup: { type: 'string', default: '200' },
      synchronous: { type: 'string', default: 'FULL' },
      'gateway-prof-dir': { type: 'string' },
      /** Node options for the gateway process only (space-separated), e.g. `--max-semi-space-size=16`. */
      'gateway-node-options': { type: 'string', default: '' },
      /** Gateway on an empty journal against one already holding this many completed executions. */
      journal: { type: 'string' },
      /** Where filled journals are kept between runs (default: <os.tmpdir()>/oncegate-bench-cache). */
      'cache-dir': { type: 'string' },
      /** With --journal: a CPU profile of one more start on the large journal, summarised. */
      'start-prof-dir': { type: 'string' },
      /**
       * Each phase in this many turns: the paths taking turns in each (plain run), or the two gateways alternating
       * (--journal, --against).
       */
      rounds: { type: 'string', default: '4' },
      /** With --journal: make no copy of the filled folder for the next run. */
      'no-spare': { type: 'boolean', default: false },
      /** This many calls held in flight at the target at once. */
      'in-flight': { type: 'string' },
      /** With --in-flight: MCP client sessions the calls are spread over. */
      clients: { type: 'string', default: '50' },
      /** With --in-flight: heap snapshots of the gateway before the calls and with all in flight, compared. */
      'heap-snapshot-dir': { type: 'string' },
      /**
       * Also a gateway with the operations listener (scraped every second) and tracing to a real OpenTelemetry
       * Collector (tools/otelcol), side by side with the plain one: what metrics and traces cost.
       */
      observed: { type: 'boolean', default: false },
      /** Also the same gateway driven by official v2 clients on MCP 2026-07-28 (no sessions), beside the v1 clients. */
      modern: { type: 'boolean', default: false },
      /** This checkout's gateway against the one of another checkout (built), side by side in alternating rounds. */
      against: { type: 'string' },
      /** With --against: also these concurrencies between 1 and 32 (comma-separated), e.g. `4,8`. */
      'also-at': { type: 'string' },
      /** Also the bytes each server's heaps allocate a call (V8's GC trace, summed): proxy, floor and gateway. */
      allocation: { type: 'boolean', default: false },
      /** Also where a call's time goes at concurrency 1, step by step, in the floor and the gateway (`bench/call-stages.mjs`). */
      stages: { type: 'boolean', default: false },
      /** Also the promises, nextTicks, setImmediates and timers each server's calling thread makes a call (`bench/async-resources.mjs`). */
      promises: { type: 'boolean', default: false },
      /** Also how often each server's calling thread asks a call for some common pieces of work (`bench/call-census.mjs`). */
      census: { type: 'boolean', default: false },
      /** Also each server's CPU a call by thread: the calling thread, worker threads, V8's helpers (/proc/<pid>/task). */
      threads: { type: 'boolean', default: false },
    },
  });
  const calls1 = Number(values.calls);
  const calls32 = Number(values['calls-c32']);
  const warmup = Number(values.warmup);
  const synchronous = values.synchronous!;
  const gatewayNodeOptions = values['gateway-node-options'].split(' ').filter((option) => option !== '');
  if (values.journal !== undefined) {
    return runBigJournal({
      executions: Number(values.journal),
      dir: values.dir!,
      synchronous,
      calls1,
      calls32,
      warmup,
      cacheDir: values['cache-dir'],
      startProfDir: values['start-prof-dir'],
      profDir: values['gateway-prof-dir'],
      rounds: Number(values.rounds),
      spare: !values['no-spare'],
      nodeOptions: gatewayNodeOptions,
    });
  }
  if (values.against !== undefined) {
    return runAgainst({
      against: values.against,
      dir: values.dir!,
      synchronous,
      calls1,
      calls32,
      alsoAt: values['also-at']?.split(',').map((value) => Number(value.trim())),
      warmup,
      rounds: Number(values.rounds),
      nodeOptions: gatewayNodeOptions,
      allocation: values.allocation!,
      promises: values.promises!,
      census: values.census!,
      threads: values.threads!,
    });
  }
  if (values['in-flight'] !== undefined) {
    return runInFlight({
      calls: Number(values['in-flight']),
      clients: Number(values.clients),
      dir: values.dir!,
      synchronous,
      warmup,
      heapSnapshotDir: values['heap-snapshot-dir'],
      nodeOptions: gatewayNodeOptions,
    });
  }
  const rounds = Math.max(1, Number(values.rounds));
  const dir = resolve(values.dir!, `gateway-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const fs = statfsSync(dir);
  const floor = fdatasyncFloor(dir, 200);
  process.stdout.write(
    `Gateway benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `data in ${dir} (fs type 0x${fs.type.toString(16)}, fdatasync p50 ${ms(floor)} ms), synchronous=${synchronous}\n` +
      `Setup: demo target, pass-through proxy, the proxy with a journal (the floor: two fsync'd commits per call and a third after it, nothing else) ` +
      `and gateway (\`node bin/oncegate.mjs start\`) each in its own child process; ` +
      `the bench process only drives load. Tool: set_config (idempotent_write, PUT /config/:name, redelivery_grace 0), ` +
      `a new value on every call. MCP clients: one Client + Streamable HTTP session per concurrent worker, one call in flight each. ` +
      `Each phase in ${rounds} rounds, every path taking its turn in each (the first place rotating), warm-up ${warmup} calls per path in the first; ` +
      `each server's CPU and peak RSS (VmHWM) read ${SETTLE_MS} ms after its turn's last answer, before the next path starts.\n`,
  );

  const servers: Server[] = [];
  const traceAllocation = values.allocation ? [ALLOCATION_TRACE] : [];
  const clients: Client[] = [];
  let closeDirect: (() => Promise<void>) | undefined;
  const rows: Array<{ system: string; c: number; phase: Phase }> = [];
  const startedAt = Date.now();
  try {
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);

    // Direct: the same HTTP request, sent with undici through a pool configured like the gateway's dispatcher.
    const direct = directHttp(targetUrl);
    closeDirect = direct.close;

    // Where a call's time goes at 1: the floor and the gateway load the preload, which writes its summary on SIGUSR2.
    const stagesArgs = values.stages ? ['--import', join(ROOT, 'bench/call-stages.mjs')] : [];
    if (values.stages) process.env['CALL_STAGES_DIR'] = dir;
    const stages = new Map<string, CallStages>();
    const promisesArgs = [...(values.promises ? ASYNC_RESOURCES_PRELOAD : []), ...(values.census ? CALL_CENSUS_PRELOAD : [])];

    /** A path the rounds take turns on: its calls, its server, and what is counted in that server. */
    interface Path {
      readonly system: string;
      readonly call: Call;
      readonly server: Server;
      readonly counted: Parameters<typeof phase>[5];
      readonly stages: boolean;
      readonly clients: Client[];
    }
    /** The pass-through proxy (with `extraArgs`) in a process of its own, as `system`. */
    const proxyPath = async (system: string, extraArgs: readonly string[], nodeArgs: readonly string[] = []): Promise<Path> => {
      const proxy = await spawnServer(
        system,
        [...traceAllocation, ...nodeArgs, ...promisesArgs, '--import', 'tsx', 'bench/passthrough-proxy.ts', '--target', targetUrl, ...extraArgs],
        [/listening on (http:\/\/\S+)/],
      );
      servers.push(proxy);
      const proxyClients = await mcpClients(proxy.matches[0]![1]!, 32);
      clients.push(...proxyClients);
      return {
        system,
        call: mcpCall(proxyClients, (text) => text.includes('"applied":true')),
        server: proxy,
        counted: countedIn(proxy),
        stages: nodeArgs.length > 0,
        clients: proxyClients,
      };
    };
    const countedIn = (server: Server): Parameters<typeof phase>[5] => ({
      allocation: values.allocation ? countAllocation(server) : undefined,
      asyncResources: values.promises ? countAsyncResources(server) : undefined,
      census: values.census ? countCensus(server) : undefined,
      threads: values.threads,
      settleMs: SETTLE_MS,
    });
    const proxy = await proxyPath('pass-through MCP proxy', []);
    // The floor of a durable gateway on this store: the same proxy writing each call in two fsync'd commits.
    const floorPath = await proxyPath(FLOOR, ['--journal', join(dir, 'floor-events.db')], stagesArgs);

    const gatewayArgs = [
      ...gatewayNodeOptions,
      ...traceAllocation,
      ...stagesArgs,
      ...promisesArgs,
      ...(values['gateway-prof-dir'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(values['gateway-prof-dir'])}`]),
    ];
    const started = await startBenchGateway(dir, targetUrl, synchronous, gatewayArgs);
    const gateway = started.server;
    servers.push(gateway);
    const gatewayClients = await mcpClients(started.url, 32, started.token);
    clients.push(...gatewayClients);
    const gatewayPath: Path = {
      system: 'oncegate gateway',
      call: mcpCall(gatewayClients, (text) => text.startsWith('set_config completed')),
      server: gateway,
      counted: countedIn(gateway),
      stages: values.stages!,
      clients: gatewayClients,
    };
    const paths: Path[] = [
      { system: 'direct HTTP', call: direct.call, server: target, counted: { settleMs: SETTLE_MS }, stages: false, clients: [] },
      proxy,
      floorPath,
      gatewayPath,
    ];

    // Each phase in rounds, every path taking its turn in each (the first place rotating), so that the machine's
    // drift over the run falls on every path alike; warm-up in the first round only.
    const parts = new Map<string, Map<number, Phase[]>>(paths.map(({ system }) => [system, new Map([[1, []], [32, []]])]));
    for (const [c, n] of [[1, calls1], [32, calls32]] as const) {
      for (let round = 0; round < rounds; round += 1) {
        for (let i = 0; i < paths.length; i += 1) {
          const { system, call, server, counted } = paths[(i + round) % paths.length]!;
          const calls = Math.round((n * (round + 1)) / rounds) - Math.round((n * round) / rounds);
          parts.get(system)!.get(c)!.push(await phase(call, c, calls, round === 0 ? warmup : 0, server, counted));
        }
      }
      if (c === 1) for (const { system, server } of paths.filter((path) => path.stages)) stages.set(system, await readCallStages(server, dir));
    }
    for (const { system } of paths) for (const c of [1, 32]) rows.push({ system, c, phase: mergePhases(parts.get(system)!.get(c)!) });
    for (const path of [proxy, floorPath]) {
      await Promise.all(path.clients.map((client) => client.close()));
      await path.server.stop();
    }
    await Promise.all(gatewayClients.map((client) => client.close()));
    if (values.modern) {
      const modernClients = await modernMcpClients(started.url, 32, started.token);
      const viaModern = mcpCall(modernClients, (text) => text.startsWith('set_config completed'));
      for (const [c, n] of [[1, calls1], [32, calls32]] as const) {
        rows.push({ system: 'oncegate gateway, MCP 2026-07-28 (v2 client)', c, phase: await phase(viaModern, c, n, warmup, gateway) });
      }
      await Promise.all(modernClients.map((client) => client.close()));
    }
    await gateway.stop();

    if (values.observed) {
      const collector = await startCollector({ forward: false });
      const observedDir = join(dir, 'observed');
      mkdirSync(observedDir, { recursive: true });
      writeFileSync(
        join(observedDir, 'oncegate.yaml'),
        `${gatewayYaml(dir, synchronous, { dataDir: join(observedDir, 'data') })}operations: { host: 127.0.0.1, port: 0 }\ntracing: { endpoint: '${collector.endpoint}' }\n`,
      );
      const observed = await startGatewayProcess(join(observedDir, 'oncegate.yaml'), gatewayArgs, [/operations:\s+(\S+)/]);
      servers.push(observed.server);
      const operations = observed.server.matches[2]?.[1];
      let scraping = true;
      let scrapes = 0;
      const scraper = (async () => {
        while (scraping && operations !== undefined) {
          await fetch(new URL('/metrics', operations)).then((response) => response.text()).then(() => (scrapes += 1), () => undefined);
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      })();
      const observedClients = await mcpClients(observed.url, 32, observed.token);
      clients.push(...observedClients);
      const viaObserved = mcpCall(observedClients, (text) => text.startsWith('set_config completed'));
      for (const [c, n] of [[1, calls1], [32, calls32]] as const) {
        rows.push({ system: 'oncegate gateway, metrics + tracing', c, phase: await phase(viaObserved, c, n, warmup, observed.server) });
      }
      scraping = false;
      await scraper;
      await Promise.all(observedClients.map((client) => client.close()));
      await observed.server.stop();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await collector.stop();
      process.stdout.write(`\nMetrics + tracing: /metrics scraped ${scrapes} times during the phases; the collector (tools/otelcol, nop exporter) received the spans.\n`);
    }

    const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as { total: number; requestsTotal: number };
    const sent = rows.reduce((sum, row) => sum + row.phase.calls, 0) + rows.length * warmup;

    const directP50 = (c: number) => percentile(rows.find((row) => row.system === 'direct HTTP' && row.c === c)!.phase.samples, 50);
    printTable(`tools/call set_config, synchronous=${synchronous}`, rows.map(({ system, c, phase: p }) => {
      const p50 = percentile(p.samples, 50);
      return {
        path: system,
        concurrency: c,
        calls: p.calls,
        p50_ms: ms(p50),
        p99_ms: ms(percentile(p.samples, 99)),
        'calls/s': rate(p.calls, p.seconds),
        'added p50 vs direct': system === 'direct HTTP' ? '—' : `+${ms(p50 - directP50(c))} ms`,
        'server peak RSS MiB': mib(p.peakKiB),
        'server CPU ms/call': Number.isFinite(p.cpuSeconds) ? ms((p.cpuSeconds * 1000) / p.calls) : 'n/a',
        'client CPU ms/call': ms((p.clientCpuSeconds * 1000) / p.calls),
        ...(values.allocation
          ? { 'server KB allocated/call': allocatedPerCall(p), 'server KB promoted/call': promotedPerCall(p), 'server GC pause ms/call': gcPausePerCall(p) }
          : {}),
        failed: p.failed,
      };
    }));

    const find = (system: string, c: number) => rows.find((row) => row.system === system && row.c === c)!.phase;
    const gw1 = find('oncegate gateway', 1);
    const px1 = find('pass-through MCP proxy', 1);
    const gw32 = find('oncegate gateway', 32);
    const px32 = find('pass-through MCP proxy', 32);
    const gwP50 = percentile(gw1.samples, 50);
    const pxP50 = percentile(px1.samples, 50);
    const gwRate = gw32.calls / gw32.seconds;
    const pxRate = px32.calls / px32.seconds;
    const cpuPerCall = (phase: typeof gw1) => (phase.cpuSeconds * 1000) / phase.calls;
    const gwRss32 = gw32.peakKiB;
    const pxRss32 = px32.peakKiB;
    const fl1 = find(FLOOR, 1);
    const fl32 = find(FLOOR, 32);
    const flP50 = percentile(fl1.samples, 50);
    const flRate = fl32.calls / fl32.seconds;
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    // The aims stand against the floor of the same run (docs/benchmarks.md, "The floor"): two fsync'd commits per call
    // cost more on this disk than an aim set against a plain proxy allows, so the gateway is held to what it adds.
    process.stdout.write(
      `\nThe floor (the proxy writing each call in two fsync'd commits, nothing else): p50 at 1 ${ms(flP50)} ms (proxy +${ms(flP50 - pxP50)} ms); ` +
        `calls/s at 32 ${rate(fl32.calls, fl32.seconds)} (${(flRate / pxRate).toFixed(2)} × the proxy's); CPU per call ${ms(cpuPerCall(fl1))} ms at 1, ${ms(cpuPerCall(fl32))} ms at 32\n` +
        `Aim 1 — gateway p50 at concurrency 1 at most the floor's + 1.0 ms (synchronous=${synchronous}): ` +
        `${verdict(gwP50 <= flP50 + 1)} (gateway ${ms(gwP50)} ms vs floor ${ms(flP50)} ms: +${ms(gwP50 - flP50)} ms)\n` +
        `Aim 2 — gateway calls/s at concurrency 32 at least 0.7 × the floor's: ` +
        `${verdict(gwRate >= 0.7 * flRate)} (gateway ${rate(gw32.calls, gw32.seconds)} calls/s = ${(gwRate / flRate).toFixed(2)} × the floor's ${rate(fl32.calls, fl32.seconds)} calls/s)\n` +
        `Aim 3 — gateway CPU per call at concurrency 32 at most the floor's + 0.6 ms: ${verdict(cpuPerCall(gw32) <= cpuPerCall(fl32) + 0.6)} ` +
        `(${ms(cpuPerCall(gw32))} ms vs the floor's ${ms(cpuPerCall(fl32))} ms: +${ms(cpuPerCall(gw32) - cpuPerCall(fl32))} ms; at 1: ${ms(cpuPerCall(gw1))} ms vs ${ms(cpuPerCall(fl1))} ms)\n` +
        `Aim 4 — gateway peak RSS at concurrency 32 at most 1.3 × the proxy's: ${verdict(gwRss32 <= 1.3 * pxRss32)} (${mib(gwRss32)} MiB vs ${mib(pxRss32)} MiB: ${(gwRss32 / pxRss32).toFixed(2)} ×)\n` +
        (values.observed
          ? (() => {
              const ob32 = find('oncegate gateway, metrics + tracing', 32);
              const ob1 = find('oncegate gateway, metrics + tracing', 1);
              const obRate = ob32.calls / ob32.seconds;
              return (
                `Metrics + tracing cost — aim at most 5 % fewer calls/s: ${verdict(obRate >= 0.95 * gwRate)} (${rate(ob32.calls, ob32.seconds)} against ${rate(gw32.calls, gw32.seconds)} calls/s at 32: ` +
                `${(((gwRate - obRate) / gwRate) * 100).toFixed(1)} % fewer; p50 at 1 ${ms(percentile(ob1.samples, 50))} against ${ms(gwP50)} ms)\n`
              );
            })()
          : '') +
        `Target check: ${effects.total.toLocaleString('en-US')} side effects recorded for ${sent.toLocaleString('en-US')} calls sent ` +
        `(${effects.total === sent ? 'every call was a new execution' : 'MISMATCH: some calls were not executed once'}); ` +
        `wall time ${((Date.now() - startedAt) / 1000).toFixed(0)} s\n`,
    );
    for (const [system, summary] of stages) printCallStages(system, summary);
    if (values.promises) printAsyncResources(rows);
    if (values.census) printCensus(rows);
    if (values.threads) printThreadCpu(rows);
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await closeDirect?.();
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
