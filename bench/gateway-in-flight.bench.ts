import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CONFIG_NAME, contractsYaml, drive, gatewayYaml, loadLine, mcpCall, mcpClients, mib, procStats, resetPeak, spawnDemoTarget, startGatewayProcess, type Server } from './gateway-support';
import { log, machineLine, printTable } from './table';

/**
 * `npm run bench -- gateway --in-flight <calls>`: the demo target holds every `PUT /config/:name` answer (its
 * `hold` control) while `calls` concurrent `tools/call`s wait inside the gateway; the gateway's RSS is read once
 * every one of them has reached the target, then the target releases them and each call must complete, with
 * exactly one target request per call (one `Idempotency-Key`, the execution id, per request).
 *
 * The calls go through the official MCP client, spread over `clients` sessions (each session has
 * calls / clients requests in flight at once, each its own POST with a streamed answer). The gateway's
 * `call_wait` and the contract's `response_timeout` are set to 10 minutes, so no call is answered "still in
 * progress" and no attempt times out before the release; each client request's timeout is as long.
 */

export interface InFlightOptions {
  readonly calls: number;
  readonly clients: number;
  readonly dir: string;
  readonly synchronous: string;
  readonly warmup: number;
  /**
   * When given: heap snapshots of the gateway (`--heapsnapshot-signal`) before the calls and with every call in
   * flight are written here, and the constructors whose objects grew most between the two are printed.
   */
  readonly heapSnapshotDir: string | undefined;
  /** Node options for the gateway process (`--gateway-node-options`). */
  readonly nodeOptions: readonly string[];
}

const WAIT = '10m';
const WAIT_MS = 10 * 60_000;

interface Held {
  readonly held: ReadonlyArray<{ method: string; path: string }>;
}

export async function runInFlight(options: InFlightOptions): Promise<void> {
  const dir = resolve(options.dir, `gateway-in-flight-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  log(
    `Gateway with calls held in flight — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `load average ${loadLine()} at the start, synchronous=${options.synchronous}\n` +
      `Setup: demo target and gateway in their own child processes; ${options.calls} concurrent tools/call set_config (a new value each) ` +
      `over ${options.clients} MCP client sessions (${Math.ceil(options.calls / options.clients)} in flight per session); the target holds every answer ` +
      `until released; call_wait and response_timeout ${WAIT}. Warm-up: ${options.warmup} calls at concurrency ${options.clients} before the hold.`,
  );
  const servers: Server[] = [];
  let clients: Client[] = [];
  try {
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);
    const control = async (action: string, body: unknown = {}) => {
      const response = await fetch(`${targetUrl}/_control/${action}`, { method: 'POST', body: JSON.stringify(body) });
      if (!response.ok) throw new Error(`target control ${action}: ${response.status} ${await response.text()}`);
      return response.json() as Promise<unknown>;
    };
    writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl, { responseTimeout: WAIT }));
    writeFileSync(join(dir, 'oncegate.yaml'), gatewayYaml(dir, options.synchronous, { callWait: WAIT }));
    const snapshotDir = options.heapSnapshotDir === undefined ? undefined : resolve(options.heapSnapshotDir);
    if (snapshotDir !== undefined) mkdirSync(snapshotDir, { recursive: true });
    const gateway = await startGatewayProcess(
      join(dir, 'oncegate.yaml'),
      [...options.nodeOptions, ...(snapshotDir === undefined ? [] : ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${snapshotDir}`])],
    );
    servers.push(gateway.server);
    const pid = gateway.server.child.pid!;
    const afterStart = procStats(pid);
    clients = await mcpClients(gateway.url, options.clients, gateway.token);
    const completed = (text: string) => text.startsWith('set_config completed');
    if (options.warmup > 0) await drive(mcpCall(clients, completed), options.clients, options.warmup);
    await control('reset-state');
    await control('hold', { match: 'PUT /config/:name' });
    const snapshots: string[] = [];
    if (snapshotDir !== undefined) snapshots.push(await heapSnapshot(pid, snapshotDir));
    resetPeak(pid);
    const before = procStats(pid);

    const runTag = `${process.pid.toString(36)}-${Date.now().toString(36)}`;
    const sent = process.hrtime.bigint();
    const seconds = () => Number(process.hrtime.bigint() - sent) / 1e9;
    let answeredEarly = 0;
    let released = false;
    const outcomes = Array.from({ length: options.calls }, async (_, i) => {
      const client = clients[i % clients.length]!;
      try {
        const result = await client.callTool(
          { name: 'set_config', arguments: { name: CONFIG_NAME, value: `held-${runTag}-${i}` } },
          undefined,
          { timeout: WAIT_MS },
        );
        if (!released) answeredEarly += 1;
        const first = (result.content as Array<{ type: string; text?: string }>)[0];
        const execution = (result._meta as Record<string, { id?: string }> | undefined)?.['io.oncegate/execution'];
        return { ok: result.isError !== true && first?.type === 'text' && completed(first.text ?? ''), id: execution?.id, at: seconds() };
      } catch (error) {
        return { ok: false, id: undefined, at: seconds(), error: String(error) };
      }
    });

    // Every call is in flight once the target holds as many answers as calls were sent.
    let heldCount = 0;
    while (heldCount < options.calls) {
      await new Promise((done) => setTimeout(done, 100));
      heldCount = ((await (await fetch(`${targetUrl}/_control/state`)).json()) as Held).held.length;
      if (seconds() > WAIT_MS / 2000) throw new Error(`only ${heldCount} of ${options.calls} calls reached the target in ${seconds().toFixed(0)} s`);
    }
    const allHeldSeconds = seconds();
    // Let the gateway settle with everything waiting (what it holds per call, not what it allocated on the way).
    await new Promise((done) => setTimeout(done, 2000));
    const inFlight = procStats(pid);
    if (snapshotDir !== undefined) snapshots.push(await heapSnapshot(pid, snapshotDir));
    const releasedAt = seconds();
    released = true;
    const { released: releasedCount } = (await control('release', { match: 'PUT /config/:name' })) as { released: number };
    const results = await Promise.all(outcomes);
    const doneSeconds = Math.max(...results.map((r) => r.at)) - releasedAt;
    await new Promise((done) => setTimeout(done, 500));
    const after = procStats(pid);

    const effects = (await (await fetch(`${targetUrl}/effects`)).json()) as {
      requests: Array<{ endpoint: string | null; idempotencyKey: string | null; status: number | null }>;
    };
    const requests = effects.requests.filter((request) => request.endpoint === 'PUT /config/:name');
    const perKey = new Map<string, number>();
    for (const request of requests) perKey.set(request.idempotencyKey ?? '', (perKey.get(request.idempotencyKey ?? '') ?? 0) + 1);
    const ids = new Set(results.map((r) => r.id).filter((id) => id !== undefined));
    const oncePerCall = requests.length === options.calls && perKey.size === options.calls && [...ids].every((id) => perKey.get(id!) === 1);
    const failed = results.filter((r) => !r.ok);

    printTable(`${options.calls} tools/call held in flight at the target, ${options.clients} MCP sessions, synchronous=${options.synchronous}`, [
      {
        'calls in flight': options.calls,
        sessions: options.clients,
        'all at target after s': allHeldSeconds.toFixed(2),
        'RSS after start MiB': mib(afterStart.rssKiB),
        'RSS before the calls MiB': mib(before.rssKiB),
        'RSS all in flight MiB (VmRSS)': mib(inFlight.rssKiB),
        'peak while sending MiB (VmHWM)': mib(inFlight.peakKiB),
        'KiB per call in flight': ((inFlight.rssKiB - before.rssKiB) / options.calls).toFixed(0),
        'all completed after release s': doneSeconds.toFixed(2),
        'RSS after MiB (now / peak)': `${mib(after.rssKiB)} / ${mib(after.peakKiB)}`,
        completed: results.length - failed.length,
        failed: failed.length,
        'answered before release': answeredEarly,
        'target requests': requests.length,
        'one request per call': oncePerCall ? 'yes' : 'NO',
      },
    ]);
    const rssMiB = Math.max(inFlight.rssKiB, inFlight.peakKiB) / 1024;
    log(
      `\nAim — gateway RSS at most 300 MiB with ${options.calls} calls in flight: ${rssMiB <= 300 ? 'met' : 'NOT met'} ` +
        `(VmRSS ${mib(inFlight.rssKiB)} MiB, peak ${mib(inFlight.peakKiB)} MiB)\n` +
        `Release: ${releasedCount} held answers sent; ${results.length - failed.length} of ${options.calls} calls completed, ` +
        `${requests.length} target requests with ${perKey.size} distinct Idempotency-Keys` +
        (failed.length > 0 ? `; first failure: ${JSON.stringify(failed[0])}` : '') +
        `; load average ${loadLine()} at the end`,
    );
    if (snapshots.length === 2) compareHeaps(snapshots[0]!, snapshots[1]!, options.calls);
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Signals the gateway to write a heap snapshot and waits until the file is complete; returns its path. */
async function heapSnapshot(pid: number, dir: string): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  for (let waited = 0; waited < 120_000; waited += 250) {
    await new Promise((done) => setTimeout(done, 250));
    const file = readdirSync(dir).find((name) => name.endsWith('.heapsnapshot') && !before.has(name));
    if (file === undefined) continue;
    const path = join(dir, file);
    // The snapshot is written as JSON ending in the strings table; complete when it parses to its last bracket.
    const tail = readFileSync(path, 'utf8').trimEnd();
    if (tail.endsWith(']}')) return path;
  }
  throw new Error('the gateway wrote no heap snapshot');
}

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count per constructor (node name for objects, type otherwise). */
function heapByConstructor(file: string): Map<string, { count: number; bytes: number }> {
  const heap = JSON.parse(readFileSync(file, 'utf8')) as HeapSnapshot;
  const fields = heap.snapshot.meta.node_fields;
  const stride = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = heap.snapshot.meta.node_types[0];
  const out = new Map<string, { count: number; bytes: number }>();
  for (let i = 0; i < heap.nodes.length; i += stride) {
    const type = types[heap.nodes[i + typeAt]!]!;
    const key = type === 'object' || type === 'closure' ? `${heap.strings[heap.nodes[i + nameAt]!]} (${type})` : `(${type})`;
    const entry = out.get(key) ?? { count: 0, bytes: 0 };
    entry.count += 1;
    entry.bytes += heap.nodes[i + sizeAt]!;
    out.set(key, entry);
  }
  return out;
}

function compareHeaps(beforeFile: string, afterFile: string, calls: number): void {
  const before = heapByConstructor(beforeFile);
  const after = heapByConstructor(afterFile);
  const total = (map: Map<string, { bytes: number }>) => [...map.values()].reduce((sum, entry) => sum + entry.bytes, 0);
  const rows = [...after.entries()]
    .map(([name, entry]) => {
      const was = before.get(name) ?? { count: 0, bytes: 0 };
      return { name, count: entry.count - was.count, bytes: entry.bytes - was.bytes };
    })
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 20);
  printTable(
    `JS heap growth from before the calls (${(total(before) / 2 ** 20).toFixed(1)} MiB) to ${calls} in flight (${(total(after) / 2 ** 20).toFixed(1)} MiB), by constructor`,
    rows.map((row) => ({
      constructor: row.name,
      'objects added': row.count.toLocaleString('en-US'),
      'per call': (row.count / calls).toFixed(1),
      'KiB added': (row.bytes / 1024).toFixed(0),
      'bytes per call': Math.round(row.bytes / calls).toLocaleString('en-US'),
    })),
  );
}
