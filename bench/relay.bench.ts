import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startKafka, type KafkaHandle } from '@oncegate/deploy-local';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { RELAY_CONSUMER } from '@oncegate/service-relay-kafka';
import { contractsYaml, drive, gatewayYaml, mcpCall, mcpClients, procStats, spawnDemoTarget, spawnServer, startGatewayProcess, type Server } from './gateway-support';
import { machineLine, mean, ms, percentile, printTable, rate } from './table';

/**
 * `npm run bench -- relay`: the Kafka relay under the gateway benchmark's load (set_config at concurrency 32, a new
 * execution per call, SQLite FULL). The gateway (`oncegate start`, no kafka section) and the relay
 * (dist/apps/relay-kafka, `kafka` added to the same configuration) are processes of their own on one data folder;
 * a real Apache Kafka 4.1.1 broker (KRaft, one node) runs beside them. The bench samples the store's head and the
 * relay's checkpoint every 100 ms: the lag is how many committed events the broker has not acknowledged yet.
 *
 * Phases: the load without the relay (the gateway's own rate), the same load with the relay (rate, lag over the
 * run, time to drain after the last call), and a catch-up of the whole journal from position 0 to a new topic (how
 * fast the relay can go when it is behind), in Kafka transactions (the default) and at least once, side by side.
 */
export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      calls: { type: 'string', default: '5000' },
      warmup: { type: 'string', default: '200' },
      concurrency: { type: 'string', default: '32' },
    },
  });
  const calls = Number(values.calls);
  const warmup = Number(values.warmup);
  const concurrency = Number(values.concurrency);
  const dir = resolve(values.dir!, `relay-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  process.stdout.write(
    `Relay benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, data in ${dir}.\n` +
      `Setup: demo target, gateway (\`oncegate start\`, SQLite FULL), relay (dist/apps/relay-kafka) and one Kafka 4.1.1 broker (KRaft, -Xmx512m), ` +
      `each its own process on this machine; the bench process drives ${concurrency} MCP clients, one call in flight each (set_config, a new execution per call).\n`,
  );
  const servers: Server[] = [];
  const clients: Client[] = [];
  let broker: KafkaHandle | undefined;
  try {
    broker = await startKafka();
    const { server: target, url: targetUrl } = await spawnDemoTarget();
    servers.push(target);
    writeFileSync(join(dir, 'tools.yaml'), contractsYaml(targetUrl));
    const gatewayConfig = join(dir, 'oncegate.yaml');
    writeFileSync(gatewayConfig, gatewayYaml(dir, 'FULL'));
    // Each relay configuration publishes to a topic of its own, with a transactional id and checkpoint of its own.
    const relayConfig = (topic: string, delivery: 'exactly_once' | 'at_least_once' = 'exactly_once') => {
      const file = join(dir, `relay-${topic}.yaml`);
      writeFileSync(
        file,
        `${gatewayYaml(dir, 'FULL')}kafka:\n  brokers: [${broker!.brokers.join(', ')}]\n  default_topic: ${topic}\n` +
          `  delivery: ${delivery}\n  transactional_id: bench-${topic}\n  checkpoint_topic: ${topic}.checkpoints\n`,
      );
      return file;
    };
    const started = await startGatewayProcess(gatewayConfig);
    servers.push(started.server);
    clients.push(...(await mcpClients(started.url, concurrency, started.token)));
    const call = mcpCall(clients, (text) => text.startsWith('set_config completed'));
    const store = openSqliteEventStore({ file: join(dir, 'data', 'events.db'), readOnly: true });
    const sample = async () => ({ at: Date.now(), head: await store.headPosition(), relayed: (await store.readCheckpoint(RELAY_CONSUMER)) ?? 0 });

    // The gateway's own rate under this load, no relay running.
    await drive(call, concurrency, warmup);
    const alone = await drive(call, concurrency, calls);

    // The same load with the relay: it starts from where the journal is, so only this phase's events are in the lag.
    const relay = await spawnServer('relay', ['dist/apps/relay-kafka/main.js', '--config', relayConfig('bench.events')], [/is running \(instance/]);
    servers.push(relay);
    const ready = await eventuallyAt(async () => {
      const now = await sample();
      return now.relayed >= now.head ? now : undefined;
    }, 120_000);
    const catchUpStart = ready;
    const samples: Array<{ at: number; head: number; relayed: number }> = [];
    let loading = true;
    const sampler = (async () => {
      while (loading) {
        samples.push(await sample());
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const before = procStats(relay.child.pid!);
    const withRelay = await drive(call, concurrency, calls);
    loading = false;
    await sampler;
    const endOfLoad = await sample();
    const drained = await eventuallyAt(async () => {
      const now = await sample();
      return now.relayed >= endOfLoad.head ? now : undefined;
    }, 120_000);
    const after = procStats(relay.child.pid!);
    const relayedEvents = drained.relayed - catchUpStart.relayed;
    const lags = samples.map((s) => s.head - s.relayed).sort((a, b) => a - b);
    const thirds = [0, 1, 2].map((i) => samples.slice(Math.floor((i * samples.length) / 3), Math.floor(((i + 1) * samples.length) / 3)).map((s) => s.head - s.relayed));
    const loadSeconds = withRelay.seconds;

    printTable(`gateway load (set_config, concurrency ${concurrency}, ${calls} calls a phase)`, [
      { phase: 'gateway alone', 'calls/s': rate(alone.calls, alone.seconds), p50_ms: ms(percentile(alone.samples, 50)), p99_ms: ms(percentile(alone.samples, 99)), failed: alone.failed },
      {
        phase: 'gateway + relay',
        'calls/s': rate(withRelay.calls, withRelay.seconds),
        p50_ms: ms(percentile(withRelay.samples, 50)),
        p99_ms: ms(percentile(withRelay.samples, 99)),
        failed: withRelay.failed,
      },
    ]);
    printTable('relay under that load', [
      {
        'events committed/s': rate(endOfLoad.head - catchUpStart.head, loadSeconds),
        'events relayed/s': rate(relayedEvents, (drained.at - catchUpStart.at) / 1000),
        'lag p50 (events)': percentile(lags, 50),
        'lag p99': percentile(lags, 99),
        'lag max': lags[lags.length - 1] ?? 0,
        'mean lag 1st/2nd/3rd third': thirds.map((third) => mean(third).toFixed(0)).join(' / '),
        'drained after last call (ms)': drained.at - endOfLoad.at,
        'relay CPU ms/1000 events': ms(((after.cpuSeconds - before.cpuSeconds) * 1e6) / relayedEvents),
        'relay peak RSS MiB': (after.peakKiB / 1024).toFixed(1),
      },
    ]);

    // Catch-up: the relay stopped, its checkpoint set back to 0, a new topic (and transactional id): the whole
    // journal as fast as it goes, once in transactions and once at least once.
    await relay.stop();
    servers.splice(servers.indexOf(relay), 1);
    const head = await store.headPosition();
    const catchUps = [];
    for (const delivery of ['exactly_once', 'at_least_once'] as const) {
      const writer = openSqliteEventStore({ file: join(dir, 'data', 'events.db') });
      await writer.storeCheckpoint(RELAY_CONSUMER, 0);
      await writer.close();
      const t0 = Date.now();
      const again = await spawnServer('relay', ['dist/apps/relay-kafka/main.js', '--config', relayConfig(`bench.catchup-${delivery.replaceAll('_', '-')}`, delivery)], [/is running \(instance/]);
      servers.push(again);
      const caught = await eventuallyAt(async () => ((await sample()).relayed >= head ? Date.now() : undefined), 300_000);
      await again.stop();
      servers.splice(servers.indexOf(again), 1);
      catchUps.push({ delivery: delivery.replaceAll('_', ' '), events: head, seconds: ((caught - t0) / 1000).toFixed(1), 'events/s (incl. start)': rate(head, (caught - t0) / 1000) });
    }
    printTable('catch-up of the whole journal (relay from position 0, to a new topic, no load)', catchUps);
    const growing = mean(thirds[2]!) > 2 * Math.max(50, mean(thirds[0]!));
    process.stdout.write(
      `\nAim — the relay keeps up with the gateway at full load (lag bounded, not growing): ${growing ? 'NOT met' : 'met'} ` +
        `(mean lag ${thirds.map((third) => mean(third).toFixed(0)).join(' → ')} events over the three thirds of the run; ` +
        `${rate(relayedEvents, (drained.at - catchUpStart.at) / 1000)} events/s relayed against ${rate(endOfLoad.head - catchUpStart.head, loadSeconds)} committed)\n`,
    );
    await store.close();
  } finally {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    for (const server of servers.reverse()) await server.stop();
    await broker?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function eventuallyAt<T>(check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
