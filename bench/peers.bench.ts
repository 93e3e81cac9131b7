import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  directHttp,
  fdatasyncFloor,
  mcpCall,
  mcpClients,
  mergePhases,
  mib,
  phase,
  ROOT,
  loadLine,
  spawnDemoTarget,
  spawnServer,
  startBenchGateway,
  type Call,
  type Phase,
  type Server,
} from './gateway-support';
import { log, machineLine, ms, percentile, printTable, rate } from './table';

/**
 * `npm run bench -- peers`: the embedded gateway against a peer MCP server doing the same work, in one run so the
 * machine cancels out. The peer is FastMCP (Python, pinned below) serving one tool, `set_config`, that sends the
 * same PUT /config/:name to the same demo target (bench/fastmcp_peer.py); the gateway is started as the gateway
 * bench starts it. Both are driven by the same official MCP client workers (one Client + Streamable HTTP session
 * per concurrent worker, one call in flight each); the direct HTTP request is the baseline under both.
 *
 * Phases (warm-up, then concurrency 1, then 32) are cut into rounds, and within a round each path takes its turn,
 * first place rotating, so a change of the machine's load during the run falls on all alike.
 *
 * FastMCP runs in a venv under the bench's data folder, made with `python3 -m venv` and `pip install` on the first
 * run and reused while it holds the pinned version. Without python3, venv, pip or the package, the bench says so
 * in one line and exits non-zero.
 */

export const FASTMCP_PIN = '4.1.6';

const GATEWAY = 'oncegate gateway';
const FASTMCP = `FastMCP ${FASTMCP_PIN}`;
const DIRECT = 'direct HTTP';

/** Each path writes its own config entry, so the target's log tells whose effects it recorded. */
const ENTRY: Record<string, string> = { [GATEWAY]: 'bench.gateway', [FASTMCP]: 'bench.fastmcp', [DIRECT]: 'bench.direct' };

/** Why the peer cannot run here; said in one line. */
class PeerUnavailable extends Error {}


export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      calls: { type: 'string', default: '2000' },
      'calls-c32': { type: 'string', default: '5000' },
      /** Calls for FastMCP at concurrency 1 and 32 when it should get fewer than the others (default: the same). */
      'fastmcp-calls': { type: 'string' },
      'fastmcp-calls-c32': { type: 'string' },
      warmup: { type: 'string', default: '200' },
      /** Each phase is cut into this many rounds; in each, every path takes its turn. */
      rounds: { type: 'string', default: '4' },
      synchronous: { type: 'string', default: 'FULL' },
      /** Node options for the gateway process only (space-separated). */
      'gateway-node-options': { type: 'string', default: '' },
      /** Leave the direct HTTP baseline out. */
      'no-direct': { type: 'boolean', default: false },
    },
  });
  const calls1 = Number(values.calls);
  const calls32 = Number(values['calls-c32']);
  const counts: Record<string, { 1: number; 32: number }> = {
    [GATEWAY]: { 1: calls1, 32: calls32 },
    [FASTMCP]: { 1: Number(values['fastmcp-calls'] ?? calls1), 32: Number(values['fastmcp-calls-c32'] ?? calls32) },
    [DIRECT]: { 1: calls1, 32: calls32 },
  };
  const warmup = Number(values.warmup);
  const rounds = Math.max(1, Number(values.rounds));
  const synchronous = values.synchronous!;
  const dataRoot = resolve(values.dir!);
  mkdirSync(dataRoot, { recursive: true });

  let python: PeerPython;
  try {
    python = peerPython(join(dataRoot, 'peers-venv'));
  } catch (error) {
    if (!(error instanceof PeerUnavailable)) throw error;
    process.stderr.write(`peers: ${error.message}\n`);
    process.exitCode = 1;
    return;
  }

  const dir = join(dataRoot, `peers-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  // The gateway commits each call durably on its path and FastMCP writes nothing: this disk's fsync shows how much
  // of the gap at concurrency 1 that alone can be.
  const fsync = fdatasyncFloor(dir, 200);
  log(
    `Gateway against peers — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `load average ${loadLine()} at the start, synchronous=${synchronous}, data in ${dir} (fdatasync p50 ${ms(fsync)} ms)\n` +
      `Peer: ${python.versions} in ${python.venv} (${python.made})\n` +
      `Setup: demo target, FastMCP server (bench/fastmcp_peer.py: uvicorn as FastMCP runs it, Streamable HTTP with sessions, ` +
      `one httpx2 AsyncClient for its lifetime, access log off) and gateway (\`node bin/oncegate.mjs start\`, as the gateway bench) ` +
      `each in its own child process; the bench process only drives load. Tool: set_config (PUT /config/:name, a new value on every call). ` +
      `MCP clients: one official TypeScript Client + Streamable HTTP session per concurrent worker, one call in flight each. ` +
      `Warm-up ${warmup} calls per path before each concurrency; each phase in ${rounds} rounds, every path taking its turn in each (first place rotating). ` +
      `Server CPU and peak RSS (VmHWM) are of the serving process and its descendants.`,
  );
  if (counts[FASTMCP]![1] !== calls1 || counts[FASTMCP]![32] !== calls32) {
    log(`FastMCP gets fewer calls: ${counts[FASTMCP]![1]} at concurrency 1 and ${counts[FASTMCP]![32]} at 32 (the others ${calls1} and ${calls32}).`);
  }

  const servers: Server[] = [];
  const clients: Client[] = [];
  let closeDirect: (() => Promise<void>) | undefined;
  const startedAt = Date.now();
  try {
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);

    const peerEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('FASTMCP_')));
    const fastmcp = await spawnServer(FASTMCP, [join(ROOT, 'bench/fastmcp_peer.py'), '--target', targetUrl], [/listening on (http:\/\/\S+)/], peerEnv, python.executable);
    servers.push(fastmcp);
    const fastmcpClients = await mcpClients(fastmcp.matches[0]![1]!, 32);
    clients.push(...fastmcpClients);

    const gateway = await startBenchGateway(dir, targetUrl, synchronous, values['gateway-node-options'].split(' ').filter((option) => option !== ''));
    servers.push(gateway.server);
    const gatewayClients = await mcpClients(gateway.url, 32, gateway.token);
    clients.push(...gatewayClients);

    const paths: Array<{ system: string; call: Call; server: Server }> = [
      { system: GATEWAY, call: mcpCall(gatewayClients, (text) => text.startsWith('set_config completed'), ENTRY[GATEWAY]), server: gateway.server },
      { system: FASTMCP, call: mcpCall(fastmcpClients, (text) => text.includes('"applied":true'), ENTRY[FASTMCP]), server: fastmcp },
    ];
    if (!values['no-direct']) {
      const direct = directHttp(targetUrl, ENTRY[DIRECT]);
      closeDirect = direct.close;
      paths.push({ system: DIRECT, call: direct.call, server: target });
    }

    const rows: Array<{ system: string; c: 1 | 32; phase: Phase }> = [];
    const sent = new Map<string, number>(paths.map(({ system }) => [system, 0]));
    for (const c of [1, 32] as const) {
      const parts = new Map<string, Phase[]>(paths.map(({ system }) => [system, []]));
      for (let round = 0; round < rounds; round += 1) {
        const order = paths.map((_, i) => paths[(i + round) % paths.length]!);
        for (const { system, call, server } of order) {
          const n = counts[system]![c];
          const calls = Math.round((n * (round + 1)) / rounds) - Math.round((n * round) / rounds);
          const measured = await phase(call, c, calls, round === 0 ? warmup : 0, server, { withChildren: true });
          parts.get(system)!.push(measured);
          sent.set(system, sent.get(system)! + measured.calls + (round === 0 ? warmup : 0));
        }
      }
      for (const { system } of paths) rows.push({ system, c, phase: mergePhases(parts.get(system)!) });
    }

    const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as { requests: Array<{ path: string; effect: boolean }> };
    const effectsOf = (system: string) => effects.requests.filter((request) => request.effect && request.path === `/config/${ENTRY[system]}`).length;

    const find = (system: string, c: number) => rows.find((row) => row.system === system && row.c === c)?.phase;
    printTable(`tools/call set_config, the gateway (synchronous=${synchronous}) and FastMCP ${FASTMCP_PIN} side by side`, rows.map(({ system, c, phase: p }) => {
      const p50 = percentile(p.samples, 50);
      const direct = find(DIRECT, c);
      return {
        path: system,
        concurrency: c,
        calls: p.calls,
        p50_ms: ms(p50),
        p99_ms: ms(percentile(p.samples, 99)),
        'calls/s': rate(p.calls, p.seconds),
        ...(direct === undefined ? {} : { 'added p50 vs direct': system === DIRECT ? '—' : `+${ms(p50 - percentile(direct.samples, 50))} ms` }),
        'server CPU ms/call': Number.isFinite(p.cpuSeconds) ? ms((p.cpuSeconds * 1000) / p.calls) : 'n/a',
        'server peak RSS MiB': mib(p.peakKiB),
        'client CPU ms/call': ms((p.clientCpuSeconds * 1000) / p.calls),
        failed: p.failed,
      };
    }));

    const gw1 = find(GATEWAY, 1)!;
    const fm1 = find(FASTMCP, 1)!;
    const gw32 = find(GATEWAY, 32)!;
    const fm32 = find(FASTMCP, 32)!;
    const gwP50 = percentile(gw1.samples, 50);
    const fmP50 = percentile(fm1.samples, 50);
    const gwRate = gw32.calls / gw32.seconds;
    const fmRate = fm32.calls / fm32.seconds;
    const verdict = (met: boolean) => (met ? 'met' : 'NOT met');
    const checks = paths.map(({ system }) => {
      const recorded = effectsOf(system);
      const calls = sent.get(system)!;
      return `${system} ${recorded.toLocaleString('en-US')} for ${calls.toLocaleString('en-US')}${recorded === calls ? '' : ' (MISMATCH)'}`;
    });
    log(
      `\nAim 1 — gateway p50 at concurrency 1 at most FastMCP's: ${verdict(gwP50 <= fmP50)} ` +
        `(gateway ${ms(gwP50)} ms vs FastMCP ${ms(fmP50)} ms: ${gwP50 <= fmP50 ? '−' : '+'}${ms(Math.abs(gwP50 - fmP50))} ms, ${(gwP50 / fmP50).toFixed(2)} ×)\n` +
        `Aim 2 — gateway calls/s at concurrency 32 at least 1.5 × FastMCP's: ${verdict(gwRate >= 1.5 * fmRate)} ` +
        `(gateway ${rate(gw32.calls, gw32.seconds)} calls/s = ${(gwRate / fmRate).toFixed(2)} × FastMCP's ${rate(fm32.calls, fm32.seconds)} calls/s)\n` +
        `Target check (side effects recorded for calls sent, warm-up included): ${checks.join('; ')}\n` +
        `Load average ${loadLine()} at the end; wall time ${((Date.now() - startedAt) / 1000).toFixed(0)} s`,
    );
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await closeDirect?.();
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

interface PeerPython {
  readonly executable: string;
  readonly venv: string;
  /** The versions that matter, e.g. `FastMCP 4.1.6 (mcp 2.3.0, uvicorn 0.55.0, httpx2 2.16.2) on Python 3.11.7`. */
  readonly versions: string;
  /** How the venv came to be: reused, or made in how long. */
  readonly made: string;
}

const VERSIONS_SCRIPT =
  "import importlib.metadata as m, platform; v = lambda p: m.version(p); print(v('fastmcp'), f\"FastMCP {v('fastmcp')} (mcp {v('mcp')}, uvicorn {v('uvicorn')}, httpx2 {v('httpx2')}) on Python {platform.python_version()}\", sep='\\t')";

/** The venv's Python with FastMCP at the pinned version: the one already there, or a new one. */
function peerPython(venv: string): PeerPython {
  const executable = join(venv, 'bin', 'python');
  const installed = () => {
    if (!existsSync(executable)) return undefined;
    const result = spawnSync(executable, ['-c', VERSIONS_SCRIPT], { encoding: 'utf8' });
    const [version, versions] = result.status === 0 ? result.stdout.trim().split('\t') : [];
    return version === FASTMCP_PIN && versions !== undefined ? versions : undefined;
  };
  const present = installed();
  if (present !== undefined) return { executable, venv, versions: present, made: 'venv reused' };

  const started = Date.now();
  const step = (what: string, command: string, args: string[]) => {
    const result = spawnSync(command, args, { encoding: 'utf8', timeout: 15 * 60_000 });
    if (result.error !== undefined) {
      const missing = (result.error as NodeJS.ErrnoException).code === 'ENOENT';
      throw new PeerUnavailable(missing ? `${what} failed: ${command} was not found` : `${what} failed: ${result.error.message}`);
    }
    if (result.status !== 0) {
      const lines = `${result.stderr}\n${result.stdout}`.split('\n').map((line) => line.trim()).filter((line) => line !== '');
      const reason = lines.find((line) => /^error/i.test(line)) ?? lines.at(-1) ?? `exit code ${result.status}`;
      throw new PeerUnavailable(`${what} failed: ${reason}`);
    }
  };
  step('`python3 -m venv`', 'python3', ['-m', 'venv', '--clear', venv]);
  step(`\`pip install fastmcp==${FASTMCP_PIN}\``, executable, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `fastmcp==${FASTMCP_PIN}`]);
  const versions = installed();
  if (versions === undefined) throw new PeerUnavailable(`the venv ${venv} does not hold fastmcp ${FASTMCP_PIN} after pip install`);
  return { executable, venv, versions, made: `venv made in ${((Date.now() - started) / 1000).toFixed(0)} s` };
}
