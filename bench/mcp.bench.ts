import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { mcpContractTools, upstreamScript } from '@oncegate/service-dispatcher-mcp/testing';
import { gatewayYaml, phase, spawnServer, startGatewayProcess, type Call, type Phase, type Server } from './gateway-support';
import { machineLine, ms, percentile, printTable, rate } from './table';

/**
 * An upstream MCP server's tool called directly with the official client, against the same tool through Oncegate on
 * the mcp channel, in one run: the test upstream (the official SDK server, its own process, Streamable HTTP with a
 * bearer token) and `oncegate start` (its own process, the token in its vault). Both legs use the official v2 client,
 * which negotiates 2026-07-28 with each. Every call carries a new account, so each one through Oncegate is a new
 * execution journalled and dispatched, never a replay.
 */

const TOKEN = 'bench-upstream-token-0f3a9c';

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      calls: { type: 'string', default: '1000' },
      'calls-c16': { type: 'string', default: '2000' },
      warmup: { type: 'string', default: '100' },
    },
  });
  const dir = resolve(values.dir!, `mcp-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const warmup = Number(values.warmup);
  const plan = [
    [1, Number(values.calls)],
    [16, Number(values['calls-c16'])],
  ] as const;
  const loadBefore = loadavg();
  process.stdout.write(
    `MCP channel benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      `load average ${loadBefore.map((value) => value.toFixed(2)).join(' / ')} (1/5/15 min) at the start, data in ${dir}\n` +
      'Setup: the test upstream (official SDK server, Streamable HTTP, bearer token) and `node bin/oncegate.mjs start` (SQLite, synchronous=FULL), ' +
      'each in its own child process; the bench process only drives load with official v2 clients (2026-07-28, one client per worker, one call in flight each). ' +
      `Tool: set_limit (idempotent_write at Oncegate), a new account on every call. Warm-up ${warmup} calls before each measured phase.\n`,
  );

  const servers: Server[] = [];
  const clients: ModernClient[] = [];
  const rows: Array<{ system: string; c: number; phase: Phase }> = [];
  const startedAt = Date.now();
  try {
    const upstreamDir = join(dir, 'upstream');
    const upstream = await spawnServer('upstream', [upstreamScript(), '--http', '--dir', upstreamDir, '--token-env', 'UPSTREAM_TOKEN'], [/listening on (http:\/\/\S+)/], {
      ...process.env,
      UPSTREAM_TOKEN: TOKEN,
    });
    servers.push(upstream);
    const upstreamUrl = upstream.matches[0]![1]!;

    const direct = await connected(upstreamUrl, TOKEN, 16);
    clients.push(...direct);
    const callDirect = call(direct, 'set_limit', (text) => text.includes('is now'));
    for (const [c, n] of plan) rows.push({ system: 'upstream, directly', c, phase: await phase(callDirect, c, n, warmup, upstream) });

    writeFileSync(
      join(dir, 'tools.yaml'),
      `version: 1\ntools:\n${mcpContractTools([{ name: 'bench_set_limit', upstreamTool: 'set_limit', operationClass: 'idempotent_write', upstream: 'bench', reach: { url: upstreamUrl }, credentialRef: 'upstream-token', limits: '{ connect_timeout: 2s, response_timeout: 10s }' }])}\n`,
    );
    writeFileSync(join(dir, 'oncegate.yaml'), gatewayYaml(dir, 'FULL'));
    await storeToken(dir, new URL(upstreamUrl).port);
    const started = await startGatewayProcess(join(dir, 'oncegate.yaml'));
    servers.push(started.server);
    const through = await connected(started.url, started.token, 16);
    clients.push(...through);
    const callThrough = call(through, 'bench_set_limit', (text) => text.startsWith('bench_set_limit completed'));
    for (const [c, n] of plan) rows.push({ system: 'through Oncegate (mcp channel)', c, phase: await phase(callThrough, c, n, warmup, started.server) });
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    for (const server of servers.reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }

  const direct = new Map(rows.filter((row) => row.system === 'upstream, directly').map((row) => [row.c, percentile(row.phase.samples, 50)]));
  printTable(
    'tools/call of an upstream MCP tool: directly, and through Oncegate on the mcp channel',
    rows.map(({ system, c, phase: measured }) => {
      const p50 = percentile(measured.samples, 50);
      return {
        system,
        concurrency: c,
        calls: measured.calls,
        failed: measured.failed,
        'p50 ms': ms(p50),
        'p95 ms': ms(percentile(measured.samples, 95)),
        'added p50 ms': system === 'upstream, directly' ? '—' : ms(p50 - direct.get(c)!),
        'calls/s': rate(measured.calls, measured.seconds),
      };
    }),
  );
  const loadAfter = loadavg();
  process.stdout.write(`\nRun took ${((Date.now() - startedAt) / 1000).toFixed(1)} s; load average ${loadAfter.map((value) => value.toFixed(2)).join(' / ')} at the end.\n`);
}

/** `count` official v2 clients of `url`, each with its own connection and the bearer token. */
async function connected(url: string, token: string, count: number): Promise<ModernClient[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const client = new ModernClient({ name: `bench-mcp-${i}`, version: '0.1.0' }, { versionNegotiation: { mode: 'auto' } });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
      return client;
    }),
  );
}

/** A call of `tool` on the worker's client with a new account each time; ok when its first text block reads as `answered`. */
function call(clients: readonly ModernClient[], tool: string, answered: (text: string) => boolean): Call {
  return async (worker, value) => {
    const result = await clients[worker]!.callTool({ name: tool, arguments: { account: value.toLowerCase(), cents: 100 } });
    const first = (result.content as Array<{ type: string; text?: string }>)[0];
    return result.isError !== true && first?.type === 'text' && answered(first.text ?? '');
  };
}

/** The upstream's token in the gateway's vault, bound to the upstream's host and port, as an operator stores it. */
async function storeToken(dir: string, port: string): Promise<void> {
  const oncegate = (args: string[]) => {
    const run = spawnSync(process.execPath, ['bin/oncegate.mjs', ...args, '--config', join(dir, 'oncegate.yaml')], { env: { ...process.env, UPSTREAM_TOKEN: TOKEN }, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`oncegate ${args.join(' ')}: ${run.stderr}`);
  };
  oncegate(['vault', 'init', '--dev']);
  oncegate(['vault', 'set', 'upstream-token', '--kind', 'password', '--bind', `127.0.0.1:${port}`, '--from-env', 'UPSTREAM_TOKEN']);
}
