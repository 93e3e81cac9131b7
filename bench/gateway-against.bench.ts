import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  ALLOCATION_TRACE,
  ASYNC_RESOURCES_PRELOAD,
  allocatedPerCall,
  countAsyncResources,
  countCensus,
  CALL_CENSUS_PRELOAD,
  printCensus,
  printThreadCpu,
  promisesPerCall,
  gcPausePerCall,
  promotedPerCall,
  contractsYaml,
  countAllocation,
  fdatasyncFloor,
  gatewayYaml,
  loadLine,
  mcpCall,
  mcpClients,
  mergePhases,
  mib,
  phase,
  ROOT,
  spawnDemoTarget,
  startGatewayProcess,
  type CountedLines,
  type Call,
  type Phase,
  type Server,
} from './gateway-support';
import { log, machineLine, ms, percentile, printTable, rate } from './table';

export interface AgainstOptions {
  /** A checkout of another version, built (`npm run build` there): its `bin/oncegate.mjs` is started. */
  readonly against: string;
  readonly dir: string;
  readonly synchronous: string;
  readonly calls1: number;
  readonly calls32: number;
  /** Also these concurrencies between 1 and 32, each with `calls32` calls (`--also-at 4,8`). */
  readonly alsoAt?: readonly number[];
  readonly warmup: number;
  readonly rounds: number;
  readonly nodeOptions: readonly string[];
  /** Also the bytes each gateway's heaps allocate a call (V8's GC trace, summed). */
  readonly allocation?: boolean;
  /** Also the promises each gateway's calling thread makes a call (`bench/async-resources.mjs`). */
  readonly promises?: boolean;
  /** Also how often each gateway's calling thread asks a call for some common pieces of work (`bench/call-census.mjs`). */
  readonly census?: boolean;
  /** Also each gateway's CPU a call by thread (/proc/<pid>/task). */
  readonly threads?: boolean;
}

/** One build under test: where it is, what it is, and what it measured round by round. */
interface Build {
  readonly name: string;
  readonly checkout: string;
  readonly commit: string;
  call?: Call;
  server?: Server;
  allocation?: ReturnType<typeof countAllocation>;
  asyncResources?: CountedLines;
  census?: CountedLines;
  readonly rounds: Map<number, Phase[]>;
}


/** `git describe` of a checkout, with a mark when its tree differs from its commit; `?` outside git. */
function commitOf(checkout: string): string {
  try {
    const head = execFileSync('git', ['-C', checkout, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['-C', checkout, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head} with changes` : head;
  } catch {
    return '?';
  }
}

/**
 * This checkout's gateway against another version's, in one run: both started by `oncegate start` on the same
 * target with the same contract and configuration, each with its own data folder, running side by side; each
 * phase (concurrency 1, any given with `--also-at`, then 32) is cut into rounds in which both take their turn, the first place alternating,
 * so a change of the machine's load falls on both alike. It prints both builds' figures, the ratios, and each
 * build's spread over the rounds: a difference inside that spread is not one the run can tell.
 */
export async function runAgainst(options: AgainstOptions): Promise<void> {
  const other = resolve(options.against);
  for (const needed of ['bin/oncegate.mjs', 'dist/apps/oncegate/main.js', 'node_modules']) {
    if (!existsSync(join(other, needed))) {
      process.stderr.write(`gateway --against: ${join(other, needed)} is missing (a checkout with its packages installed and \`npm run build\` run in it)\n`);
      process.exitCode = 1;
      return;
    }
  }
  const middle = options.alsoAt ?? [];
  const wrong = middle.find((c) => !Number.isInteger(c) || c <= 1 || c >= 32);
  if (wrong !== undefined) {
    process.stderr.write(`gateway --against --also-at: ${wrong} is not a whole number between 1 and 32 (the phases at 1 and 32 run anyway)\n`);
    process.exitCode = 1;
    return;
  }
  /** The phases' concurrencies, in the order they run. */
  const concurrencies = [1, ...[...new Set(middle)].sort((a, b) => a - b), 32];
  const dir = resolve(options.dir, `gateway-against-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const builds: Build[] = [
    { name: 'this checkout', checkout: ROOT, commit: commitOf(ROOT), rounds: new Map() },
    { name: 'other', checkout: other, commit: commitOf(other), rounds: new Map() },
  ];
  log(
    `Gateway against another build — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `load average ${loadLine()} at the start, fdatasync p50 ${ms(fdatasyncFloor(dir, 200))} ms, synchronous=${options.synchronous}\n` +
      builds.map((build) => `  ${build.name}: ${build.checkout} (${build.commit})`).join('\n') +
      `\nSetup: demo target and both gateways (\`node bin/oncegate.mjs start\` of each checkout) in processes of their own, side by side; ` +
      `the bench process only drives load (one official MCP client and session per concurrent worker). Tool: set_config, a new value on every call. ` +
      `Warm-up ${options.warmup} calls per build before each concurrency; each phase in ${options.rounds} rounds, both builds taking their turn in each (first place alternating).`,
  );

  const servers: Server[] = [];
  const clients: Client[] = [];
  const startedAt = Date.now();
  try {
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);
    writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl));
    for (const [i, build] of builds.entries()) {
      const configFile = join(dir, `oncegate-${i}.yaml`);
      writeFileSync(configFile, gatewayYaml(dir, options.synchronous, { dataDir: join(dir, `data-${i}`) }));
      const started = await startGatewayProcess(
        configFile,
        [...options.nodeOptions, ...(options.allocation === true ? [ALLOCATION_TRACE] : []), ...(options.promises === true ? ASYNC_RESOURCES_PRELOAD : []), ...(options.census === true ? CALL_CENSUS_PRELOAD : [])],
        [],
        build.checkout,
      );
      servers.push(started.server);
      if (options.allocation === true) build.allocation = countAllocation(started.server);
      if (options.promises === true) build.asyncResources = countAsyncResources(started.server);
      if (options.census === true) build.census = countCensus(started.server);
      const gatewayClients = await mcpClients(started.url, 32, started.token);
      clients.push(...gatewayClients);
      build.server = started.server;
      build.call = mcpCall(gatewayClients, (text) => text.startsWith('set_config completed'));
    }

    for (const c of concurrencies) {
      const n = c === 1 ? options.calls1 : options.calls32;
      for (const build of builds) build.rounds.set(c, []);
      for (let round = 0; round < options.rounds; round += 1) {
        const calls = Math.round((n * (round + 1)) / options.rounds) - Math.round((n * round) / options.rounds);
        const order = round % 2 === 0 ? builds : [...builds].reverse();
        for (const build of order) build.rounds.get(c)!.push(await phase(build.call!, c, calls, round === 0 ? options.warmup : 0, build.server!, { allocation: build.allocation, asyncResources: build.asyncResources, census: build.census, threads: options.threads }));
      }
    }

    const merged = (build: Build, c: number) => mergePhases(build.rounds.get(c)!);
    const cpuPerCall = (p: Phase) => (p.cpuSeconds * 1000) / p.calls;
    const clientCpuPerCall = (p: Phase) => (p.clientCpuSeconds * 1000) / p.calls;
    const spread = (build: Build, c: number, of: (p: Phase) => number, format: (value: number) => string) => {
      const values = build.rounds.get(c)!.map(of);
      return `${format(Math.min(...values))}–${format(Math.max(...values))}`;
    };
    printTable(
      `tools/call set_config through each build, synchronous=${options.synchronous}`,
      builds.flatMap((build) =>
        concurrencies.map((c) => {
          const p = merged(build, c);
          return {
            build: `${build.name} (${build.commit})`,
            concurrency: c,
            calls: p.calls,
            p50_ms: ms(percentile(p.samples, 50)),
            p99_ms: ms(percentile(p.samples, 99)),
            'calls/s': rate(p.calls, p.seconds),
            'server CPU ms/call': ms(cpuPerCall(p)),
            'server peak RSS MiB': mib(p.peakKiB),
            'rounds: p50 ms': spread(build, c, (r) => percentile(r.samples, 50), ms),
            'rounds: calls/s': spread(build, c, (r) => r.calls / r.seconds, (value) => value.toFixed(0)),
            'rounds: CPU ms/call': spread(build, c, cpuPerCall, ms),
            'client CPU ms/call': ms(clientCpuPerCall(p)),
            ...(options.allocation === true ? { 'KB allocated/call': allocatedPerCall(p), 'KB promoted/call': promotedPerCall(p), 'GC pause ms/call': gcPausePerCall(p) } : {}),
            ...(options.promises === true ? { 'promises/call': promisesPerCall(p) } : {}),
            failed: p.failed,
          };
        }),
      ),
    );
    const [mine, theirs] = builds as [Build, Build];
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
    const rows = concurrencies.flatMap((c) => {
      const a = merged(mine, c);
      const b = merged(theirs, c);
      return [
        { measure: `p50 at ${c}`, 'this checkout': `${ms(percentile(a.samples, 50))} ms`, other: `${ms(percentile(b.samples, 50))} ms`, 'this ÷ other': ratio(percentile(a.samples, 50), percentile(b.samples, 50)) },
        { measure: `calls/s at ${c}`, 'this checkout': rate(a.calls, a.seconds), other: rate(b.calls, b.seconds), 'this ÷ other': ratio(a.calls / a.seconds, b.calls / b.seconds) },
        { measure: `CPU ms/call at ${c}`, 'this checkout': ms(cpuPerCall(a)), other: ms(cpuPerCall(b)), 'this ÷ other': ratio(cpuPerCall(a), cpuPerCall(b)) },
        { measure: `client CPU ms/call at ${c}`, 'this checkout': ms(clientCpuPerCall(a)), other: ms(clientCpuPerCall(b)), 'this ÷ other': ratio(clientCpuPerCall(a), clientCpuPerCall(b)) },
        { measure: `peak RSS at ${c}`, 'this checkout': `${mib(a.peakKiB)} MiB`, other: `${mib(b.peakKiB)} MiB`, 'this ÷ other': ratio(a.peakKiB, b.peakKiB) },
        ...(a.allocatedBytes === undefined || b.allocatedBytes === undefined
          ? []
          : [
              { measure: `KB allocated/call at ${c}`, 'this checkout': allocatedPerCall(a), other: allocatedPerCall(b), 'this ÷ other': ratio(a.allocatedBytes / a.calls, b.allocatedBytes / b.calls) },
              { measure: `KB promoted/call at ${c}`, 'this checkout': promotedPerCall(a), other: promotedPerCall(b), 'this ÷ other': ratio(a.promotedBytes! / a.calls, b.promotedBytes! / b.calls) },
              { measure: `GC pause ms/call at ${c}`, 'this checkout': gcPausePerCall(a), other: gcPausePerCall(b), 'this ÷ other': ratio(a.gcPauseMs! / a.calls, b.gcPauseMs! / b.calls) },
            ]),
        ...(a.asyncPerCall?.['PROMISE'] === undefined || b.asyncPerCall?.['PROMISE'] === undefined
          ? []
          : [{ measure: `promises/call at ${c}`, 'this checkout': promisesPerCall(a), other: promisesPerCall(b), 'this ÷ other': ratio(a.asyncPerCall['PROMISE'], b.asyncPerCall['PROMISE']) }]),
      ];
    });
    printTable('this checkout against the other', rows);
    const byBuild = builds.flatMap((build) => concurrencies.map((c) => ({ system: `${build.name} (${build.commit})`, c, phase: merged(build, c) })));
    if (options.census === true) printCensus(byBuild);
    if (options.threads === true) printThreadCpu(byBuild);

    const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as { total: number };
    const sent = builds.reduce((sum, build) => sum + concurrencies.reduce((s, c) => s + merged(build, c).calls + options.warmup, 0), 0);
    log(
      `\nTarget check: ${effects.total.toLocaleString('en-US')} side effects recorded for ${sent.toLocaleString('en-US')} calls sent ` +
        `(${effects.total === sent ? 'every call was a new execution' : 'MISMATCH: some calls were not executed once'}); ` +
        `load average ${loadLine()} at the end; wall time ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
    );
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
