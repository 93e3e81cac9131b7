import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, fdatasyncSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernStreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { threadCpuSeconds } from './cpu';
import { targetAgent, targetRequest } from './passthrough-proxy';
import { ms, percentile, printTable } from './table';

/**
 * What the gateway benchmarks share: servers as child processes, their RSS and CPU time from /proc, load driven
 * through the official MCP client, and the bench's tool contract and gateway config.
 */

export const ROOT = fileURLToPath(new URL('../', import.meta.url));
export const CONFIG_NAME = 'bench.entry';
const CLOCK_TICKS_PER_SECOND = 100;

export interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  readonly matches: RegExpExecArray[];
  /** SIGTERM, then SIGKILL when it has not exited after `killAfterMs` (default 10 s). */
  stop(killAfterMs?: number): Promise<void>;
}

/**
 * Spawns a server (`command`, by default this Node) and waits until its stdout has printed a line matching each
 * pattern, in order.
 */
export async function spawnServer(
  name: string,
  args: string[],
  patterns: RegExp[],
  env: NodeJS.ProcessEnv = process.env,
  command: string = process.execPath,
): Promise<Server> {
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const lines = createInterface({ input: child.stdout! });
  const matches: RegExpExecArray[] = [];
  await new Promise<void>((done, fail) => {
    const onExit = (code: number | null) => fail(new Error(`${name} exited with code ${code} before it was ready`));
    child.once('exit', onExit);
    // A command that cannot be started emits 'error' and no 'exit'.
    child.once('error', (error) => fail(new Error(`${name} could not be started: ${error.message}`)));
    lines.on('line', (line) => {
      const match = matches.length < patterns.length ? patterns[matches.length]!.exec(line) : null;
      if (match === null) return;
      matches.push(match);
      if (matches.length === patterns.length) {
        child.off('exit', onExit);
        done();
      }
    });
  });
  // Keep reading stdout (its logs) so the server never blocks on a full pipe.
  return {
    name,
    child,
    matches,
    async stop(killAfterMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The demo target (`apps/demo-target`) on a free port of loopback, with the URL it listens on. */
export async function spawnDemoTarget(): Promise<{ readonly server: Server; readonly url: string }> {
  const server = await spawnServer('demo target', ['--import', 'tsx', 'apps/demo-target/src/main.ts', '--port', '0'], [/listening on (http:\/\/\S+)/]);
  return { server, url: server.matches[0]![1]! };
}

/** The machine's load averages (1, 5, 15 minutes), for a bench's first and last lines. */
export const loadLine = () => loadavg().map((load) => load.toFixed(2)).join(' ');

/** Resident-set figures (VmRSS now, VmHWM the peak) and CPU time of a process, from /proc (Linux only; NaN elsewhere). */
export function procStats(pid: number): { rssKiB: number; peakKiB: number; cpuSeconds: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rssKiB = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
    const peakKiB = Number(/VmHWM:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    return { rssKiB, peakKiB, cpuSeconds };
  } catch {
    return { rssKiB: NaN, peakKiB: NaN, cpuSeconds: NaN };
  }
}

/** Resets the peak RSS the kernel reports (VmHWM) to the current RSS; false when the kernel refuses. */
export function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** A process and its descendants alive now, found through the parent pid in each /proc/<pid>/stat (Linux only). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [pid];
  }
  for (const entry of entries) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Ended between the listing and the read.
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i += 1) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/**
 * procStats summed over a process and its descendants (a server that runs workers or helpers is measured whole):
 * RSS and peak are the sums, CPU time adds what each has counted for children it already reaped (cutime, cstime),
 * so a helper that came and went during a phase is in it too.
 */
export function procTreeStats(pid: number): { rssKiB: number; peakKiB: number; cpuSeconds: number } {
  let rssKiB = 0;
  let peakKiB = 0;
  let cpuSeconds = 0;
  for (const member of processTree(pid)) {
    const stats = procStats(member);
    if (member !== pid && !Number.isFinite(stats.cpuSeconds)) continue;
    rssKiB += stats.rssKiB;
    peakKiB += stats.peakKiB;
    cpuSeconds += stats.cpuSeconds + reapedChildrenCpuSeconds(member);
  }
  return { rssKiB, peakKiB, cpuSeconds };
}

function reapedChildrenCpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of stat (cutime, cstime) are the 14th and 15th after the command name.
    return (Number(fields[13]) + Number(fields[14])) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

export function fdatasyncFloor(dir: string, iterations: number): number {
  const file = join(dir, 'fsync-probe.bin');
  const fd = openSync(file, 'w');
  const block = Buffer.alloc(4096, 7);
  const samples: number[] = [];
  for (let i = 0; i < iterations; i += 1) {
    writeSync(fd, block);
    const start = process.hrtime.bigint();
    fdatasyncSync(fd);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  closeSync(fd);
  rmSync(file);
  return percentile(samples.sort((a, b) => a - b), 50);
}

export type Call = (worker: number, value: string) => Promise<boolean>;

export interface Phase {
  readonly samples: number[];
  readonly seconds: number;
  readonly calls: number;
  readonly failed: number;
  readonly peakKiB: number;
  readonly cpuSeconds: number;
  /** CPU time of the bench process (the clients) during the phase. */
  readonly clientCpuSeconds: number;
  /** Bytes the server's heaps allocated during the phase (`countAllocation`), when counted. */
  readonly allocatedBytes?: number;
  /** Bytes its collections of the young generation moved to the old one, and their pauses (ms), when counted. */
  readonly promotedBytes?: number;
  readonly gcPauseMs?: number;
  /** Asynchronous resources the server's calling thread created a call, by type (`countAsyncResources`), when counted. */
  readonly asyncPerCall?: Readonly<Record<string, number>>;
  /** Pieces of work the server's calling thread asked for a call, by name (`countCensus`), when counted. */
  readonly censusPerCall?: Readonly<Record<string, number>>;
  /** The serving process's CPU seconds in the phase by thread name (`threadCpuSeconds`), when read. */
  readonly threadCpuSeconds?: Readonly<Record<string, number>>;
}

/** The V8 flag whose trace `countAllocation` reads: a line on stdout per collection, with the bytes allocated since the last. */
export const ALLOCATION_TRACE = '--trace-gc-nvp';

/**
 * What a server's heaps have allocated so far, and what their collections cost, summed from its GC trace (it must run
 * with `ALLOCATION_TRACE`): the bytes allocated, the bytes promoted from the young generation to the old one (what
 * survived two collections of the young generation: in-flight calls' state and what the caches keep), and the
 * collections' pauses.
 */
export interface AllocationCount {
  readonly bytes: number;
  readonly promotedBytes: number;
  readonly pauseMs: number;
}

/**
 * Sums the `allocated=`, `promoted=` and `pause=` of every collection the server reports on its stdout (each
 * isolate's: the main thread's and its workers'). Bytes allocated since a heap's last collection are counted at its
 * next, so a phase of a few hundred MB is counted to within one young generation.
 */
export function countAllocation(server: Server): AllocationCount {
  const count = { bytes: 0, promotedBytes: 0, pauseMs: 0 };
  createInterface({ input: server.child.stdout! }).on('line', (line) => {
    const allocated = /\ballocated=(\d+)/.exec(line);
    if (allocated === null) return;
    count.bytes += Number(allocated[1]);
    count.promotedBytes += Number(/\bpromoted=(\d+)/.exec(line)?.[1] ?? 0);
    count.pauseMs += Number(/\bpause=([\d.]+)/.exec(line)?.[1] ?? 0);
  });
  return count;
}

/** The preload whose lines `countAsyncResources` reads. */
export const ASYNC_RESOURCES_PRELOAD = ['--import', join(ROOT, 'bench/async-resources.mjs')];

/** The preload whose lines `countCensus` reads. */
export const CALL_CENSUS_PRELOAD = ['--import', join(ROOT, 'bench/call-census.mjs')];

/** The latest counts a server loaded with a counting preload printed: POSTs and what it counted since its start. */
export interface CountedLines {
  latest: { readonly posts: number; readonly counts: Readonly<Record<string, number>> } | undefined;
}

/** What `bench/async-resources.mjs` prints: asynchronous resources by type. */
export function countAsyncResources(server: Server): CountedLines {
  return countLines(server, 'async-resources ');
}

/** What `bench/call-census.mjs` prints: pieces of work by name. */
export function countCensus(server: Server): CountedLines {
  return countLines(server, 'call-census ');
}

function countLines(server: Server, prefix: string): CountedLines {
  const count: CountedLines = { latest: undefined };
  createInterface({ input: server.child.stdout! }).on('line', (line) => {
    if (!line.startsWith(prefix)) return;
    const fields = Object.fromEntries(line.slice(prefix.length).split(' ').map((field) => field.split('=') as [string, string]));
    const { posts, ...counts } = fields;
    count.latest = { posts: Number(posts), counts: Object.fromEntries(Object.entries(counts).map(([type, n]) => [type, Number(n)])) };
  });
  return count;
}

/** What a server created per POST between two of its lines (both taken from the same window, so edges cancel). */
function perCallBetween(before: CountedLines['latest'], after: CountedLines['latest']): Record<string, number> | undefined {
  if (before === undefined || after === undefined || after.posts <= before.posts) return undefined;
  const posts = after.posts - before.posts;
  return Object.fromEntries(Object.entries(after.counts).map(([type, n]) => [type, (n - (before.counts[type] ?? 0)) / posts]));
}

/**
 * `call`, started at most `perSecond` times a second over all workers (evenly spaced): with `drive`, an offered rate
 * instead of as fast as the server answers, so that two servers are compared at the same calls/s.
 */
export function paced(call: Call, perSecond: number): Call {
  let next = 0;
  return async (worker, value) => {
    const now = performance.now();
    const at = Math.max(now, next);
    next = at + 1000 / perSecond;
    if (at > now) await new Promise((resolve) => setTimeout(resolve, at - now));
    return call(worker, value);
  };
}

let sequence = 0;
const runTag = `${process.pid.toString(36)}-${Date.now().toString(36)}`;

/** `total` calls spread over `concurrency` workers that each send their next call when the previous one answered. */
export async function drive(call: Call, concurrency: number, total: number): Promise<Omit<Phase, 'peakKiB' | 'cpuSeconds' | 'clientCpuSeconds'>> {
  const samples: number[] = [];
  let issued = 0;
  let failed = 0;
  const start = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (issued < total) {
        issued += 1;
        sequence += 1;
        const value = `v-${runTag}-${sequence}`;
        const t0 = process.hrtime.bigint();
        const ok = await call(worker, value).catch(() => false);
        samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (!ok) failed += 1;
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { samples: samples.sort((a, b) => a - b), seconds, calls: samples.length, failed };
}

/**
 * Warm-up at the same concurrency, then the measured calls with the serving process's peak RSS and CPU time; with
 * `withChildren`, those of the process and its descendants (procTreeStats). With `settleMs`, the server's CPU and
 * peak are read that long after the last answer, so work a server defers past its answers (a batch it folds later,
 * a record written after the answer) counts for its own calls and not for whatever runs next.
 */
export async function phase(
  call: Call,
  concurrency: number,
  total: number,
  warmup: number,
  server: Server,
  options: {
    readonly withChildren?: boolean;
    readonly allocation?: AllocationCount;
    readonly asyncResources?: CountedLines;
    readonly census?: CountedLines;
    readonly threads?: boolean;
    readonly settleMs?: number;
  } = {},
): Promise<Phase> {
  if (warmup > 0) await drive(call, concurrency, warmup);
  const pid = server.child.pid!;
  const stats = options.withChildren === true ? procTreeStats : procStats;
  for (const member of options.withChildren === true ? processTree(pid) : [pid]) resetPeak(member);
  const before = stats(pid);
  const allocatedBefore = options.allocation === undefined ? undefined : { ...options.allocation };
  const asyncBefore = options.asyncResources?.latest;
  const censusBefore = options.census?.latest;
  const threadsBefore = options.threads === true ? threadCpuSeconds(pid) : undefined;
  const clientBefore = process.cpuUsage();
  const result = await drive(call, concurrency, total);
  const client = process.cpuUsage(clientBefore);
  if (options.settleMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.settleMs));
  const after = stats(pid);
  const threads = threadsBefore === undefined ? undefined : threadsSince(threadsBefore, threadCpuSeconds(pid));
  const perCall = options.asyncResources === undefined ? undefined : perCallBetween(asyncBefore, options.asyncResources.latest);
  const census = options.census === undefined ? undefined : perCallBetween(censusBefore, options.census.latest);
  return {
    ...(perCall === undefined ? {} : { asyncPerCall: perCall }),
    ...(census === undefined ? {} : { censusPerCall: census }),
    ...(threads === undefined ? {} : { threadCpuSeconds: threads }),
    ...result,
    peakKiB: after.peakKiB,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    clientCpuSeconds: (client.user + client.system) / 1e6,
    ...(allocatedBefore === undefined
      ? {}
      : {
          allocatedBytes: options.allocation!.bytes - allocatedBefore.bytes,
          promotedBytes: options.allocation!.promotedBytes - allocatedBefore.promotedBytes,
          gcPauseMs: options.allocation!.pauseMs - allocatedBefore.pauseMs,
        }),
  };
}

/** One phase from its rounds: all samples, summed time and CPU, the highest peak RSS. */
export function mergePhases(parts: readonly Phase[]): Phase {
  return {
    samples: parts.flatMap((part) => part.samples).sort((a, b) => a - b),
    seconds: parts.reduce((sum, part) => sum + part.seconds, 0),
    calls: parts.reduce((sum, part) => sum + part.calls, 0),
    failed: parts.reduce((sum, part) => sum + part.failed, 0),
    peakKiB: Math.max(...parts.map((part) => part.peakKiB)),
    cpuSeconds: parts.reduce((sum, part) => sum + part.cpuSeconds, 0),
    clientCpuSeconds: parts.reduce((sum, part) => sum + part.clientCpuSeconds, 0),
    ...(parts.every((part) => part.allocatedBytes !== undefined)
      ? {
          allocatedBytes: parts.reduce((sum, part) => sum + part.allocatedBytes!, 0),
          promotedBytes: parts.reduce((sum, part) => sum + part.promotedBytes!, 0),
          gcPauseMs: parts.reduce((sum, part) => sum + part.gcPauseMs!, 0),
        }
      : {}),
    ...(parts.every((part) => part.asyncPerCall !== undefined) ? { asyncPerCall: weightedPerCall(parts) } : {}),
    ...(parts.every((part) => part.censusPerCall !== undefined) ? { censusPerCall: weightedPerCall(parts, (part) => part.censusPerCall!) } : {}),
    ...(parts.every((part) => part.threadCpuSeconds !== undefined) ? { threadCpuSeconds: parts.map((part) => part.threadCpuSeconds!).reduce(addSeconds) } : {}),
  };
}

/** Each thread name's seconds between two readings (a thread started in between counts from nothing). */
function threadsSince(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(after).map(([name, seconds]) => [name, Math.max(0, seconds - (before[name] ?? 0))]));
}

function addSeconds(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): Record<string, number> {
  const sum: Record<string, number> = { ...a };
  for (const [name, seconds] of Object.entries(b)) sum[name] = (sum[name] ?? 0) + seconds;
  return sum;
}

/** Thread groups of a Node server, by the names `threadCpuSeconds` reads, and the column each is shown in. */
const THREAD_COLUMNS: ReadonlyArray<readonly [column: string, names: readonly string[]]> = [
  ['calling thread', ['MainThread']],
  ['worker threads (the store\'s writer)', ['WorkerThread']],
  ['V8 helper threads (collector, compiler)', ['V8Worker']],
  ['libuv pool', ['libuv-worker']],
];
const GROUPED_THREADS = new Set(THREAD_COLUMNS.flatMap(([, names]) => names));

/** The serving processes' CPU a call by thread, from the phases that read it (`phase(…, { threads: true })`). */
export function printThreadCpu(rows: ReadonlyArray<{ readonly system: string; readonly c: number; readonly phase: Phase }>): void {
  const read = rows.filter((row) => row.phase.threadCpuSeconds !== undefined);
  if (read.length === 0) return;
  const msPerCall = (seconds: number, phase: Phase) => ((seconds * 1000) / phase.calls).toFixed(3);
  printTable(
    'CPU ms a call by thread, from /proc/<pid>/task (ticks of 10 ms: phases of a few thousand calls read to about 0.005 ms a call)',
    read.map((row) => {
      const threads = row.phase.threadCpuSeconds!;
      const columns = Object.fromEntries(
        THREAD_COLUMNS.map(([column, names]) => [column, msPerCall(names.reduce((sum, name) => sum + (threads[name] ?? 0), 0), row.phase)]),
      );
      const other = Object.entries(threads).filter(([name]) => !GROUPED_THREADS.has(name)).reduce((sum, [, seconds]) => sum + seconds, 0);
      return { path: row.system, concurrency: row.c, ...columns, other: msPerCall(other, row.phase), 'all threads': msPerCall(Object.values(threads).reduce((sum, seconds) => sum + seconds, 0), row.phase) };
    }),
  );
}

/** The rounds' resources a call, each round weighted by its calls. */
function weightedPerCall(parts: readonly Phase[], of: (part: Phase) => Readonly<Record<string, number>> = (part) => part.asyncPerCall!): Record<string, number> {
  const calls = parts.reduce((sum, part) => sum + part.calls, 0);
  const types = new Set(parts.flatMap((part) => Object.keys(of(part))));
  return Object.fromEntries([...types].map((type) => [type, parts.reduce((sum, part) => sum + (of(part)[type] ?? 0) * part.calls, 0) / calls]));
}

/** Promises a call the phase's server made on its calling thread, or `n/a` when not counted. */
export function promisesPerCall(phase: Phase): string {
  return phase.asyncPerCall?.['PROMISE'] === undefined ? 'n/a' : phase.asyncPerCall['PROMISE'].toFixed(1);
}

/** KB a call allocated in the phase's server, or `n/a` when not counted. */
export function allocatedPerCall(phase: Phase): string {
  return phase.allocatedBytes === undefined ? 'n/a' : (phase.allocatedBytes / 1000 / phase.calls).toFixed(1);
}

/** KB a call promoted to the old generation in the phase's server, or `n/a` when not counted. */
export function promotedPerCall(phase: Phase): string {
  return phase.promotedBytes === undefined ? 'n/a' : (phase.promotedBytes / 1000 / phase.calls).toFixed(1);
}

/** Milliseconds of collection pauses a call in the phase's server, or `n/a` when not counted. */
export function gcPausePerCall(phase: Phase): string {
  return phase.gcPauseMs === undefined ? 'n/a' : (phase.gcPauseMs / phase.calls).toFixed(3);
}

export async function mcpClients(url: string, count: number, token?: string): Promise<Client[]> {
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const client = new Client({ name: `bench-${i}`, version: '0.1.0' });
      // POSTs go without the transport's long-lived abort signal: Node 20's fetch adds a listener to it per request
      // and frees them only at GC, which floods stderr with MaxListenersExceededWarning. The GET stream keeps it.
      const fetchWithoutPostSignal: typeof fetch = (input, init) => fetch(input, init?.method === 'POST' ? { ...init, signal: null } : init);
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, fetch: fetchWithoutPostSignal }));
      return client;
    }),
  );
}

/** Official v2 clients (`@modelcontextprotocol/client`) that negotiate, so they speak 2026-07-28 to the gateway: no session. */
export async function modernMcpClients(url: string, count: number, token: string): Promise<ModernClient[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const client = new ModernClient({ name: `bench-v2-${i}`, version: '0.1.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new ModernStreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      if (client.getNegotiatedProtocolVersion() !== '2026-07-28') throw new Error(`the v2 client negotiated ${client.getNegotiatedProtocolVersion()}`);
      return client;
    }),
  );
}

/** `set_config` of the entry `configName` (default CONFIG_NAME) through `clients`, one per worker. */
export function mcpCall(
  clients: ReadonlyArray<Pick<Client, 'callTool'> | Pick<ModernClient, 'callTool'>>,
  completed: (text: string) => boolean,
  configName: string = CONFIG_NAME,
): Call {
  return async (worker, value) => {
    const result = await clients[worker]!.callTool({ name: 'set_config', arguments: { name: configName, value } });
    const first = (result.content as Array<{ type: string; text?: string }>)[0];
    return result.isError !== true && first?.type === 'text' && completed(first.text ?? '');
  };
}

export function contractsYaml(targetUrl: string, options: { readonly responseTimeout?: string } = {}): string {
  return `version: 1
tools:
  - name: set_config
    description: Set a named configuration entry to a value; repeating it changes nothing.
    class: idempotent_write
    channel: http
    target: bench/config
    input_schema:
      type: object
      properties:
        name: { type: string, pattern: "^[a-z][a-z0-9_.-]*$" }
        value: { type: string, maxLength: 1024 }
      required: [name, value]
      additionalProperties: false
    http:
      method: PUT
      url: ${targetUrl}/config/{{args.name}}
      headers:
        Content-Type: application/json
      body:
        value: "{{args.value}}"
      idempotency_header: Idempotency-Key
    correlation_window: 5m
    redelivery_grace: 0
    limits:
      response_bytes: 256KiB
      connect_timeout: 2s
      response_timeout: ${options.responseTimeout ?? '10s'}
`;
}

/** The gateway's config: data in `dir`/data unless `dataDir` names another folder; `callWait` sets `call_wait`. */
export function gatewayYaml(dir: string, synchronous: string, options: { readonly dataDir?: string; readonly callWait?: string } = {}): string {
  return `listen: { host: 127.0.0.1, port: 0, path: /mcp }
data_dir: ${JSON.stringify(options.dataDir ?? join(dir, 'data'))}${options.callWait === undefined ? '' : `\ncall_wait: ${options.callWait}`}
contracts: ${JSON.stringify(join(dir, 'tools.yaml'))}
store: { driver: sqlite, synchronous: ${synchronous} }
dev_token: true
demo_target: { enabled: false }
authorization:
  allow:
    "*": ["*"]
`;
}

export const mib = (kib: number) => (Number.isFinite(kib) ? (kib / 1024).toFixed(1) : 'n/a');


/** A gateway started by `node bin/oncegate.mjs start` with `configFile`, and how long it took to start. */
export interface StartedGateway {
  readonly server: Server;
  readonly url: string;
  readonly token: string;
  /** From the spawn to the lines `oncegate start` prints once the gateway listens (URL and dev token). */
  readonly startMs: number;
}

/**
 * The gateway as the gateway bench runs it: the bench's contract (set_config against `targetUrl`) and config
 * written to `dir`, started by `oncegate start` with `nodeOptions`.
 */
export async function startBenchGateway(dir: string, targetUrl: string, synchronous: string, nodeOptions: readonly string[] = []): Promise<StartedGateway> {
  writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl));
  writeFileSync(join(dir, 'oncegate.yaml'), gatewayYaml(dir, synchronous));
  return startGatewayProcess(join(dir, 'oncegate.yaml'), nodeOptions);
}

/**
 * The baseline under every MCP path: the same HTTP request `set_config` of `configName` renders, sent with undici
 * through a pool configured like the gateway's dispatcher.
 */
export function directHttp(targetUrl: string, configName: string = CONFIG_NAME): { readonly call: Call; close(): Promise<void> } {
  const pool = targetAgent();
  const origin = new URL(targetUrl).origin;
  return {
    call: async (_worker, value) => {
      const response = await pool.request({ origin, ...targetRequest(configName, value, `direct-${value}`) });
      await response.body.text();
      return response.statusCode === 200;
    },
    close: () => pool.close(),
  };
}

/** `oncegate start --config configFile` of `checkout` (this one by default), with `nodeOptions`. */
export async function startGatewayProcess(
  configFile: string,
  nodeOptions: readonly string[] = [],
  morePatterns: readonly RegExp[] = [],
  checkout: string = ROOT,
): Promise<StartedGateway> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ONCEGATE_')));
  const started = process.hrtime.bigint();
  const server = await spawnServer(
    'gateway',
    [...nodeOptions, join(checkout, 'bin/oncegate.mjs'), 'start', '--config', configFile],
    [/listening on (http:\/\/\S+)/, /dev token:\s+(\S+)/, ...morePatterns],
    env,
  );
  const startMs = Number(process.hrtime.bigint() - started) / 1e6;
  const url = server.matches[0]![1]!;
  // The command prints its URL just before it starts listening for SIGTERM; a stop sent in between would end it
  // without its shutdown (no final seal). An answer over HTTP means that moment has passed.
  await fetch(new URL('/healthz', url));
  return { server, url, token: server.matches[1]![1]!, startMs };
}

/** What `bench/call-stages.mjs` found in a server at concurrency 1 (medians over the calls of its most common sequence). */
export interface CallStages {
  readonly calls: number;
  readonly sameSequence: number;
  readonly marks: ReadonlyArray<{ readonly name: string; readonly atMs: number; readonly busyMs: number }>;
  readonly gapMs: number | null;
  readonly gapBusyMs: number | null;
}

/** Asks a server started with `bench/call-stages.mjs` for its summary (SIGUSR2) and reads it from `dir`. */
export async function readCallStages(server: Server, dir: string): Promise<CallStages> {
  const file = join(dir, `stages-${server.child.pid}.json`);
  rmSync(file, { force: true });
  server.child.kill('SIGUSR2');
  for (let waited = 0; !existsSync(file); waited += 50) {
    if (waited > 5_000) throw new Error(`${server.name} wrote no call stages to ${file}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return JSON.parse(readFileSync(file, 'utf8')) as CallStages;
}

/** A server's call at concurrency 1, mark by mark: when, the step since the mark before, and the calling thread's busy time. */
export function printCallStages(system: string, stages: CallStages): void {
  let at = 0;
  let busy = 0;
  printTable(
    `${system}: a call at concurrency 1, step by step (medians over ${stages.sameSequence} of ${stages.calls} calls with the same sequence of marks; ms from the request's arrival)`,
    stages.marks.map((mark) => {
      const row = { 'step ends at': mark.name, 'ms from arrival': ms(mark.atMs), 'step ms': ms(mark.atMs - at), 'calling thread busy in it, ms': ms(mark.busyMs - busy) };
      at = mark.atMs;
      busy = mark.busyMs;
      return row;
    }),
  );
  if (stages.gapMs !== null) {
    process.stdout.write(
      `From the response's end to the next request's arrival: ${ms(stages.gapMs)} ms, of which the calling thread was busy ${ms(stages.gapBusyMs ?? 0)} ms\n`,
    );
  }
}

/**
 * The census of each server and concurrency that counted one: a column per piece of work, a call's share of it. With
 * two builds, their rows side by side.
 */
export function printCensus(rows: ReadonlyArray<{ readonly system: string; readonly c: number; readonly phase: Phase }>): void {
  const counted = rows.filter((row) => row.phase.censusPerCall !== undefined);
  if (counted.length === 0) return;
  const names = [...new Set(counted.flatMap((row) => Object.keys(row.phase.censusPerCall!)))].sort();
  printTable(
    'work a call asks of the calling thread, by piece (bench/call-census.mjs; each counted function is wrapped, so this run\'s other figures are not a plain run\'s)',
    names.map((name) => ({
      'piece of work': name,
      ...Object.fromEntries(counted.map((row) => [`${row.system} at ${row.c}`, (row.phase.censusPerCall![name] ?? 0).toFixed(2)])),
    })),
  );
}

/** What each server's calling thread created a call, in the phases of a run with `--promises`. */
export function printAsyncResources(rows: ReadonlyArray<{ readonly system: string; readonly c: number; readonly phase: Phase }>): void {
  const counted = rows.filter((row) => row.phase.asyncPerCall !== undefined);
  const per = (row: (typeof counted)[number], type: string) => (row.phase.asyncPerCall![type] ?? 0).toFixed(1);
  printTable(
    'asynchronous resources a call, created on the calling thread (bench/async-resources.mjs; a promise hook slows the servers, so this run\'s other figures are not a plain run\'s)',
    counted.map((row) => ({
      path: row.system,
      concurrency: row.c,
      promises: promisesPerCall(row.phase),
      'process.nextTick': per(row, 'TickObject'),
      setImmediate: per(row, 'Immediate'),
      'timers (setTimeout, setInterval)': per(row, 'Timeout'),
    })),
  );
}
