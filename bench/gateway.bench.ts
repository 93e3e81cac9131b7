import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, fdatasyncSync, mkdirSync, openSync, readFileSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Agent } from 'undici';
import { targetAgent, targetRequest } from './passthrough-proxy';
import { machineLine, ms, percentile, printTable, rate } from './table';

/**
 * `tools/call` through the gateway against the same HTTP request sent directly and against a plain pass-through
 * MCP proxy on the same SDK, at concurrency 1 and 32.
 *
 * Every server runs in its own child process (target, proxy, gateway via `bin/oncegate.mjs start`), so the bench
 * process is only the load generator and each server's peak RSS (VmHWM, reset per phase through clear_refs) and
 * CPU time are its own. Every call carries a new value, so each one is a new execution the gateway journals and
 * dispatches, never a replay of a stored result.
 */

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CONFIG_NAME = 'bench.entry';
const CLOCK_TICKS_PER_SECOND = 100;

interface Server {
  readonly name: string;
  readonly child: ChildProcess;
  readonly matches: RegExpExecArray[];
  stop(): Promise<void>;
}

/** Spawns a server and waits until its stdout has printed a line matching each pattern, in order. */
async function spawnServer(name: string, args: string[], patterns: RegExp[], env: NodeJS.ProcessEnv = process.env): Promise<Server> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const lines = createInterface({ input: child.stdout! });
  const matches: RegExpExecArray[] = [];
  await new Promise<void>((done, fail) => {
    const onExit = (code: number | null) => fail(new Error(`${name} exited with code ${code} before it was ready`));
    child.once('exit', onExit);
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
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resident-set figures and CPU time of a process, from /proc (Linux only; NaN elsewhere). */
function procStats(pid: number): { peakKiB: number; cpuSeconds: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const peakKiB = Number(/VmHWM:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the command name.
    const cpuSeconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    return { peakKiB, cpuSeconds };
  } catch {
    return { peakKiB: NaN, cpuSeconds: NaN };
  }
}

/** Resets the peak RSS the kernel reports (VmHWM) to the current RSS; false when the kernel refuses. */
function resetPeak(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

function fdatasyncFloor(dir: string, iterations: number): number {
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

type Call = (worker: number, value: string) => Promise<boolean>;

interface Phase {
  readonly samples: number[];
  readonly seconds: number;
  readonly calls: number;
  readonly failed: number;
  readonly peakKiB: number;
  readonly cpuSeconds: number;
  /** CPU time of the bench process (the clients) during the phase. */
  readonly clientCpuSeconds: number;
}

let sequence = 0;
const runTag = `${process.pid.toString(36)}-${Date.now().toString(36)}`;

/** `total` calls spread over `concurrency` workers that each send their next call when the previous one answered. */
async function drive(call: Call, concurrency: number, total: number): Promise<Omit<Phase, 'peakKiB' | 'cpuSeconds' | 'clientCpuSeconds'>> {
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

/** Warm-up at the same concurrency, then the measured calls with the serving process's peak RSS and CPU time. */
async function phase(call: Call, concurrency: number, total: number, warmup: number, server: Server): Promise<Phase> {
  if (warmup > 0) await drive(call, concurrency, warmup);
  const pid = server.child.pid!;
  resetPeak(pid);
  const before = procStats(pid);
  const clientBefore = process.cpuUsage();
  const result = await drive(call, concurrency, total);
  const client = process.cpuUsage(clientBefore);
  const after = procStats(pid);
  return {
    ...result,
    peakKiB: after.peakKiB,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
    clientCpuSeconds: (client.user + client.system) / 1e6,
  };
}

async function mcpClients(url: string, count: number, token?: string): Promise<Client[]> {
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

function mcpCall(clients: Client[], completed: (text: string) => boolean): Call {
  return async (worker, value) => {
    const result = await clients[worker]!.callTool({ name: 'set_config', arguments: { name: CONFIG_NAME, value } });
    const first = (result.content as Array<{ type: string; text?: string }>)[0];
    return result.isError !== true && first?.type === 'text' && completed(first.text ?? '');
  };
}

function contractsYaml(targetUrl: string): string {
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
      response_timeout: 10s
`;
}

function gatewayYaml(dir: string, synchronous: string): string {
  return `listen: { host: 127.0.0.1, port: 0, path: /mcp }
data_dir: ${JSON.stringify(join(dir, 'data'))}
contracts: ${JSON.stringify(join(dir, 'tools.yaml'))}
store: { driver: sqlite, synchronous: ${synchronous} }
dev_token: true
demo_target: { enabled: false }
authorization:
  allow:
    "*": ["*"]
`;
}

const mib = (kib: number) => (Number.isFinite(kib) ? (kib / 1024).toFixed(1) : 'n/a');

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
    },
  });
  const calls1 = Number(values.calls);
  const calls32 = Number(values['calls-c32']);
  const warmup = Number(values.warmup);
  const synchronous = values.synchronous!;
  const dir = resolve(values.dir!, `gateway-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const fs = statfsSync(dir);
  const floor = fdatasyncFloor(dir, 200);
  process.stdout.write(
    `Gateway benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `data in ${dir} (fs type 0x${fs.type.toString(16)}, fdatasync p50 ${ms(floor)} ms), synchronous=${synchronous}\n` +
      `Setup: demo target, pass-through proxy and gateway (\`node bin/oncegate.mjs start\`) each in its own child process; ` +
      `the bench process only drives load. Tool: set_config (idempotent_write, PUT /config/:name, redelivery_grace 0), ` +
      `a new value on every call. MCP clients: one Client + Streamable HTTP session per concurrent worker, one call in flight each. ` +
      `Warm-up ${warmup} calls before each measured phase; RSS = peak (VmHWM) of the serving process during the phase.\n`,
  );

  const servers: Server[] = [];
  const clients: Client[] = [];
  let agent: Agent | undefined;
  const rows: Array<{ system: string; c: number; phase: Phase }> = [];
  const startedAt = Date.now();
  try {
    const target = await spawnServer('demo target', ['--import', 'tsx', 'apps/demo-target/src/main.ts', '--port', '0'], [/listening on (http:\/\/\S+)/]);
    servers.push(target);
    const targetUrl = target.matches[0]![1]!;
    const origin = new URL(targetUrl).origin;

    // Direct: the same HTTP request, sent with undici through a pool configured like the gateway's dispatcher.
    const pool = targetAgent();
    agent = pool;
    const direct: Call = async (_worker, value) => {
      const response = await pool.request({ origin, ...targetRequest(CONFIG_NAME, value, `direct-${value}`) });
      await response.body.text();
      return response.statusCode === 200;
    };
    for (const [c, n] of [[1, calls1], [32, calls32]] as const) rows.push({ system: 'direct HTTP', c, phase: await phase(direct, c, n, warmup, target) });

    const proxy = await spawnServer('pass-through proxy', ['--import', 'tsx', 'bench/passthrough-proxy.ts', '--target', targetUrl], [/listening on (http:\/\/\S+)/]);
    servers.push(proxy);
    const proxyClients = await mcpClients(proxy.matches[0]![1]!, 32);
    clients.push(...proxyClients);
    const viaProxy = mcpCall(proxyClients, (text) => text.includes('"applied":true'));
    for (const [c, n] of [[1, calls1], [32, calls32]] as const) {
      rows.push({ system: 'pass-through MCP proxy', c, phase: await phase(viaProxy, c, n, warmup, proxy) });
    }
    await Promise.all(proxyClients.map((client) => client.close()));
    await proxy.stop();

    writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl));
    writeFileSync(join(dir, 'oncegate.yaml'), gatewayYaml(dir, synchronous));
    const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('ONCEGATE_')));
    const prof = values['gateway-prof-dir'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${resolve(values['gateway-prof-dir'])}`];
    const gateway = await spawnServer(
      'gateway',
      [...prof, 'bin/oncegate.mjs', 'start', '--config', join(dir, 'oncegate.yaml')],
      [/listening on (http:\/\/\S+)/, /dev token:\s+(\S+)/],
      env,
    );
    servers.push(gateway);
    const gatewayClients = await mcpClients(gateway.matches[0]![1]!, 32, gateway.matches[1]![1]!);
    clients.push(...gatewayClients);
    const viaGateway = mcpCall(gatewayClients, (text) => text.startsWith('set_config completed'));
    for (const [c, n] of [[1, calls1], [32, calls32]] as const) {
      rows.push({ system: 'oncegate gateway', c, phase: await phase(viaGateway, c, n, warmup, gateway) });
    }
    await Promise.all(gatewayClients.map((client) => client.close()));
    await gateway.stop();

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
        failed: p.failed,
      };
    }));

    const find = (system: string, c: number) => rows.find((row) => row.system === system && row.c === c)!.phase;
    const gw1 = find('oncegate gateway', 1);
    const added = percentile(gw1.samples, 50) - directP50(1);
    const gw32 = find('oncegate gateway', 32);
    const px32 = find('pass-through MCP proxy', 32);
    const gwRate = gw32.calls / gw32.seconds;
    const pxRate = px32.calls / px32.seconds;
    process.stdout.write(
      `\nAim 1 — at most 1.5 ms p50 added over the direct call at concurrency 1 (synchronous=${synchronous}): ` +
        `${added <= 1.5 ? 'met' : 'NOT met'} (+${ms(added)} ms: gateway ${ms(percentile(gw1.samples, 50))} ms vs direct ${ms(directP50(1))} ms)\n` +
        `Aim 2 — at least half the pass-through proxy's calls/s at concurrency 32: ` +
        `${gwRate >= pxRate / 2 ? 'met' : 'NOT met'} (gateway ${rate(gw32.calls, gw32.seconds)} calls/s = ${((100 * gwRate) / pxRate).toFixed(0)}% ` +
        `of the proxy's ${rate(px32.calls, px32.seconds)} calls/s)\n` +
        `Target check: ${effects.total.toLocaleString('en-US')} side effects recorded for ${sent.toLocaleString('en-US')} calls sent ` +
        `(${effects.total === sent ? 'every call was a new execution' : 'MISMATCH: some calls were not executed once'}); ` +
        `wall time ${((Date.now() - startedAt) / 1000).toFixed(0)} s\n`,
    );
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await agent?.close();
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
