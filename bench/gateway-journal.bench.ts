import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  contractsYaml,
  gatewayYaml,
  mcpCall,
  mcpClients,
  loadLine,
  mergePhases,
  mib,
  phase,
  procStats,
  spawnDemoTarget,
  startGatewayProcess,
  type Phase,
  type Server,
} from './gateway-support';
import { filledDataFolder, prepareSpareCopy, runCopyOf } from './journal-fill';
import { log, machineLine, ms, percentile, printTable, rate } from './table';

/**
 * `npm run bench -- gateway --journal <executions>`: the gateway on an empty data folder against the gateway on
 * one whose journal already holds `executions` completed executions (bench/journal-fill.ts), each measured as the
 * plain gateway run measures it (warm-up, then concurrency 1 and 32), with the start time and RSS after start.
 */

export interface BigJournalOptions {
  readonly executions: number;
  readonly dir: string;
  readonly synchronous: string;
  readonly calls1: number;
  readonly calls32: number;
  readonly warmup: number;
  /** Where filled folders are kept; default `<os.tmpdir()>/oncegate-bench-cache`. */
  readonly cacheDir: string | undefined;
  /** When given: a CPU profile of one more start on the filled journal (start, then stop), summarised. */
  readonly startProfDir: string | undefined;
  /** CPU profiles of both gateways under load go here (a folder each), summarised. */
  readonly profDir: string | undefined;
  /** Each phase is cut into this many turns, alternating between the two gateways. */
  readonly rounds: number;
  /** After the run, copy the filled folder for the next run (default true). */
  readonly spare: boolean;
  /** Node options for the gateway processes (`--gateway-node-options`). */
  readonly nodeOptions: readonly string[];
}

interface Measured {
  readonly journal: string;
  readonly startMs: number;
  readonly startRssKiB: number;
  readonly startPeakKiB: number;
  readonly phases: Array<{ c: number; phase: Phase }>;
}


export async function runBigJournal(options: BigJournalOptions): Promise<void> {
  const dir = resolve(options.dir, `gateway-journal-${process.pid}`);
  const cacheRoot = options.cacheDir ?? join(tmpdir(), 'oncegate-bench-cache');
  mkdirSync(dir, { recursive: true });
  mkdirSync(cacheRoot, { recursive: true });
  log(
    `Gateway on a large journal — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `load average ${loadLine()} at the start, synchronous=${options.synchronous}, data in ${dir}, cache in ${cacheRoot}\n` +
      `Setup as the gateway run: demo target and gateway in their own child processes, set_config with a new value per call, ` +
      `one MCP client + session per concurrent worker; warm-up ${options.warmup} calls before each phase; both gateways run at once and take turns, ` +
      `each phase in ${options.rounds} rounds (empty, then large); ` +
      `peak RSS = VmHWM of the gateway during the phase; RSS after start = VmRSS / VmHWM once it printed its URL.`,
  );
  const servers: Server[] = [];
  const clients: Client[] = [];
  const startedAt = Date.now();
  try {
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);

    const filled = await filledDataFolder({ executions: options.executions, cacheRoot, targetUrl, log });
    const m = filled.manifest;
    log(
      filled.cached
        ? `Filled folder from the cache (${m.key}, built ${m.builtAt}; the fill took ${m.fillSeconds.toFixed(0)} s).`
        : `Filled ${m.executions.toLocaleString('en-US')} executions in ${m.fillSeconds.toFixed(0)} s ` +
            `(${rate(m.events, m.fillSeconds)} events/s; template call ${m.templateSeconds.toFixed(1)} s); cached as ${m.key}.`,
    );
    log(
      `  ${m.executions.toLocaleString('en-US')} executions, ${m.sessions.toLocaleString('en-US')} sessions, ${m.events.toLocaleString('en-US')} events ` +
        `(head position ${m.head.toLocaleString('en-US')}), ${(m.fileBytes / 2 ** 30).toFixed(2)} GiB; the first start after the fill ` +
        `took ${(m.settleStartMs / 1000).toFixed(1)} s, its stop (sealing to position ${m.sealedTo.toLocaleString('en-US')}) ${(m.settleStopMs / 1000).toFixed(1)} s.`,
    );
    const bigData = join(dir, 'big', 'data');
    const copy = runCopyOf(filled, bigData);
    log(
      copy.spare
        ? `  the copy the previous run prepared was taken for this run (${copy.seconds.toFixed(1)} s).`
        : `  copied for this run in ${copy.seconds.toFixed(1)} s (a copy for the next run is made after the measurements).`,
    );

    writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl));
    // Both gateways run side by side and take turns: each phase is cut into rounds, empty then large, so a change
    // of the machine's load during the run falls on both alike.
    const launch = async (journal: string, dataDir: string) => {
      const configFile = join(dir, `oncegate-${journal.replace(/\W+/g, '-')}.yaml`);
      writeFileSync(configFile, gatewayYaml(dir, options.synchronous, { dataDir }));
      const profDir = options.profDir === undefined ? undefined : resolve(options.profDir, journal.replace(/\W+/g, '-'));
      if (profDir !== undefined) mkdirSync(profDir, { recursive: true });
      const gateway = await startGatewayProcess(configFile, [...options.nodeOptions, ...(profDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profDir}`])]);
      servers.push(gateway.server);
      const afterStart = procStats(gateway.server.child.pid!);
      const gatewayClients = await mcpClients(gateway.url, 32, gateway.token);
      clients.push(...gatewayClients);
      const call = mcpCall(gatewayClients, (text) => text.startsWith('set_config completed'));
      const measured: Measured = { journal, startMs: gateway.startMs, startRssKiB: afterStart.rssKiB, startPeakKiB: afterStart.peakKiB, phases: [] };
      const stop = async () => {
        await Promise.all(gatewayClients.map((client) => client.close()));
        await gateway.server.stop(10 * 60_000);
        const profile = profDir === undefined ? undefined : readdirSync(profDir).find((name) => name.endsWith('.cpuprofile'));
        if (profile !== undefined) profiles.push({ journal, file: join(profDir!, profile) });
      };
      return { gateway, call, measured, stop };
    };
    const profiles: Array<{ journal: string; file: string }> = [];
    const runs = [await launch('empty', join(dir, 'empty', 'data')), await launch(`${m.executions.toLocaleString('en-US')} executions`, bigData)];
    for (const [c, n] of [[1, options.calls1], [32, options.calls32]] as const) {
      const parts: Phase[][] = runs.map(() => []);
      for (let round = 0; round < options.rounds; round += 1) {
        const calls = Math.round((n * (round + 1)) / options.rounds) - Math.round((n * round) / options.rounds);
        for (const [i, run] of runs.entries()) parts[i]!.push(await phase(run.call, c, calls, round === 0 ? options.warmup : 0, run.gateway.server));
      }
      runs.forEach((run, i) => run.measured.phases.push({ c, phase: mergePhases(parts[i]!) }));
    }
    for (const run of runs) await run.stop();
    const [empty, big] = runs.map((run) => run.measured) as [Measured, Measured];

    const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as { total: number };
    const sent = [empty, big].reduce((sum, run) => sum + run.phases.reduce((s, p) => s + p.phase.calls + options.warmup, 0), 0) + (filled.cached ? 0 : 2);

    printTable(`tools/call set_config through the gateway, empty journal vs ${m.executions.toLocaleString('en-US')} executions, synchronous=${options.synchronous}`, [empty, big].flatMap((run) =>
      run.phases.map(({ c, phase: p }) => ({
        journal: run.journal,
        'start s': (run.startMs / 1000).toFixed(2),
        'RSS after start MiB (now / peak)': `${mib(run.startRssKiB)} / ${mib(run.startPeakKiB)}`,
        concurrency: c,
        calls: p.calls,
        p50_ms: ms(percentile(p.samples, 50)),
        p99_ms: ms(percentile(p.samples, 99)),
        'calls/s': rate(p.calls, p.seconds),
        'peak RSS MiB': mib(p.peakKiB),
        'server CPU ms/call': Number.isFinite(p.cpuSeconds) ? ms((p.cpuSeconds * 1000) / p.calls) : 'n/a',
        failed: p.failed,
      })),
    ));
    const ratio = (a: number, b: number) => `${(b / a).toFixed(2)}×`;
    const at = (run: Measured, c: number) => run.phases.find((p) => p.c === c)!.phase;
    const rows: Array<Record<string, string>> = [];
    for (const c of [1, 32]) {
      const e = at(empty, c);
      const b = at(big, c);
      rows.push({ measure: `p50 at concurrency ${c}`, empty: `${ms(percentile(e.samples, 50))} ms`, large: `${ms(percentile(b.samples, 50))} ms`, 'large / empty': ratio(percentile(e.samples, 50), percentile(b.samples, 50)) });
      rows.push({ measure: `p99 at concurrency ${c}`, empty: `${ms(percentile(e.samples, 99))} ms`, large: `${ms(percentile(b.samples, 99))} ms`, 'large / empty': ratio(percentile(e.samples, 99), percentile(b.samples, 99)) });
      rows.push({ measure: `calls/s at concurrency ${c}`, empty: rate(e.calls, e.seconds), large: rate(b.calls, b.seconds), 'large / empty': ratio(e.calls / e.seconds, b.calls / b.seconds) });
      rows.push({ measure: `CPU ms/call at concurrency ${c}`, empty: ms((e.cpuSeconds * 1000) / e.calls), large: ms((b.cpuSeconds * 1000) / b.calls), 'large / empty': ratio(e.cpuSeconds / e.calls, b.cpuSeconds / b.calls) });
      rows.push({ measure: `peak RSS at concurrency ${c}`, empty: `${mib(e.peakKiB)} MiB`, large: `${mib(b.peakKiB)} MiB`, 'large / empty': ratio(e.peakKiB, b.peakKiB) });
    }
    rows.push({ measure: 'start (spawn → URL printed)', empty: `${(empty.startMs / 1000).toFixed(2)} s`, large: `${(big.startMs / 1000).toFixed(2)} s`, 'large / empty': ratio(empty.startMs, big.startMs) });
    rows.push({ measure: 'RSS after start (VmRSS)', empty: `${mib(empty.startRssKiB)} MiB`, large: `${mib(big.startRssKiB)} MiB`, 'large / empty': ratio(empty.startRssKiB, big.startRssKiB) });
    rows.push({ measure: 'peak RSS during start (VmHWM)', empty: `${mib(empty.startPeakKiB)} MiB`, large: `${mib(big.startPeakKiB)} MiB`, 'large / empty': ratio(empty.startPeakKiB, big.startPeakKiB) });
    printTable(`empty journal vs ${m.executions.toLocaleString('en-US')} executions (${m.events.toLocaleString('en-US')} events)`, rows);

    const p50e = percentile(at(empty, 1).samples, 50);
    const p50b = percentile(at(big, 1).samples, 50);
    log(
      `\nAim — p50 at concurrency 1 at most 10 % above the empty journal's: ${p50b <= p50e * 1.1 ? 'met' : 'NOT met'} ` +
        `(${ms(p50b)} ms vs ${ms(p50e)} ms, ${(((p50b - p50e) / p50e) * 100).toFixed(1)} %)\n` +
        `Target check: ${effects.total.toLocaleString('en-US')} side effects for ${sent.toLocaleString('en-US')} calls sent ` +
        `(${effects.total === sent ? 'every call was a new execution' : 'MISMATCH'}); load average ${loadLine()} at the end; ` +
        `wall time ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
    );

    for (const { journal, file } of profiles) summariseProfile(file, `CPU profile of the gateway on the ${journal} journal (start, both phases, stop)`);

    if (options.startProfDir !== undefined) {
      const profDir = resolve(options.startProfDir);
      mkdirSync(profDir, { recursive: true });
      const before = new Set(readdirSync(profDir));
      const configFile = join(dir, 'oncegate-profile.yaml');
      writeFileSync(configFile, gatewayYaml(dir, options.synchronous, { dataDir: bigData }));
      const gateway = await startGatewayProcess(configFile, [...options.nodeOptions, '--cpu-prof', `--cpu-prof-dir=${profDir}`]);
      const startMs = gateway.startMs;
      await gateway.server.stop(10 * 60_000);
      const file = readdirSync(profDir).find((name) => name.endsWith('.cpuprofile') && !before.has(name));
      if (file !== undefined) summariseProfile(join(profDir, file), `CPU profile of one start on the large journal (${(startMs / 1000).toFixed(2)} s to listen; the profile runs to the end of the stop)`);
    }
    if (options.spare) log(`\nA copy of the filled folder for the next run was made in ${prepareSpareCopy(filled).toFixed(1)} s.`);
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    for (const server of servers.reverse()) await server.stop(10 * 60_000);
    rmSync(dir, { recursive: true, force: true });
  }
}

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: number[];
}

/**
 * Prints the functions with the most self time in a `.cpuprofile`, and for each the share of samples whose stack
 * passes through it (total time), so a scan at start shows by name.
 */
export function summariseProfile(file: string, title: string): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const label = (node: ProfileNode) => {
    const url = node.callFrame.url.replace(/^file:\/\//, '').replace(/^.*\/(dist|node_modules)\//, '$1/');
    return `${node.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${node.callFrame.lineNumber + 1}` : ''}`.trim();
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') return;
    all += dt;
    self.set(label(node), (self.get(label(node)) ?? 0) + dt);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = label(byId.get(at)!);
      if (seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + dt);
    }
  });
  const top = (map: Map<string, number>, count: number) => [...map.entries()].sort((a, b) => b[1] - a[1]).slice(0, count);
  printTable(`${title}: busy ${all.toFixed(0)} ms, top self time`, top(self, 15).map(([name, t]) => ({ function: name, 'self ms': t.toFixed(0), 'self %': ((100 * t) / all).toFixed(1), 'total ms': (total.get(name) ?? 0).toFixed(0) })));
  const interesting = top(total, 400).filter(([name]) => /readAll|readStream|refresh|start|seal|sweep|catch|subscri|replay|restore|fold/i.test(name) && !/node:internal/.test(name)).slice(0, 20);
  printTable(`${title}: total time of journal-reading functions`, interesting.map(([name, t]) => ({ function: name, 'total ms': t.toFixed(0), 'total %': ((100 * t) / all).toFixed(1) })));
}
