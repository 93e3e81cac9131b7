import { spawnSync } from 'node:child_process';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatEventLine, formatHeader, publicKeyId, splitLines, verifyJournal } from '@oncegate/journal';
import { JournalBuilder } from '../libs/journal/src/testing/journal-builder';
import { machineLine, printTable, rate } from './table';

/** Payload and metadata shaped like an ExecutionAccepted event (same as the store benchmark). */
const payload = {
  schemaVersion: 1,
  record: {
    actor: 'agent:deploy-bot',
    tool: 'deploy_release',
    channel: 'http',
    target: 'deploy-api.internal.example/releases',
    credential_ref: 'deploy-service',
    method: 'POST',
    arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' },
    intent_scope: 'run:5f8097',
  },
  fingerprint: 'hmac-sha256:k1:6f1d0c3b9a7e5d4c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0f9e8d7c6b5a',
  operationClass: 'irreversible',
  windowEndsAt: '2026-11-30T07:00:00.000Z',
};
const metadata = {
  causationId: '01938a6e-7c3e-7a4b-9d2f-5e6a7b8c9d0e',
  correlation: { jsonRpcId: 42, sessionId: 'f3b1c2d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d', transport: 'streamable-http' },
  actor: 'agent:deploy-bot',
  schemaVersion: 1,
};
const STREAMS = 5000;

/** Writes an export of `events` events with a seal about every `sealEvery`; returns the key to verify with. */
function generate(file: string, events: number, sealEvery: number): { publicKeyPem: string; seconds: number } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const start = process.hrtime.bigint();
  const fd = openSync(file, 'w');
  let chunk = '';
  const builder = new JournalBuilder(privateKey, publicKey, (event) => {
    chunk += formatEventLine(event) + '\n';
    if (chunk.length > 1 << 20) {
      writeSync(fd, chunk);
      chunk = '';
    }
  });
  // The header states the range, so write it first from what the loop below will produce.
  writeSync(fd, formatHeader({ exportedAt: new Date().toISOString(), fromPosition: 0, toPosition: events, publicKeyId: publicKeyId(publicKey) }) + '\n');
  const types = ['ExecutionAccepted', 'Dispatched', 'OutcomeObserved'];
  let n = 0;
  while (builder.head < events) {
    // One slot is kept free for the seal event itself (plus one concurrent append before it).
    if (builder.head > 0 && builder.head % sealEvery === 0 && builder.head + 2 <= events) {
      builder.seal([() => builder.append(`execution-${n % STREAMS}`, types[n++ % 3]!, payload, metadata)]);
      continue;
    }
    if (builder.head === events - 1) {
      builder.seal();
      if (builder.head === events) break;
    }
    builder.append(`execution-${n % STREAMS}`, types[n++ % 3]!, payload, metadata);
  }
  writeSync(fd, chunk);
  closeSync(fd);
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    seconds: Number(process.hrtime.bigint() - start) / 1e9,
  };
}

interface ChildResult {
  ok: boolean;
  kind?: string;
  events: number;
  seals: number;
  bytes: number;
  seconds: number;
  baselineRssKiB: number;
  maxRssKiB: number;
}

interface VerifyChildOptions {
  /** `chunks`: the journal's `splitLines` over the file stream; `readline`: node:readline, as the CLI reads. */
  reader: 'chunks' | 'readline';
  /** Passed to verifyJournal; undefined: its default. */
  workers: number | undefined;
}

/** Runs inside a fresh process so that the generator's memory does not count. */
async function verifyChild(file: string, publicKeyPem: string, options: VerifyChildOptions): Promise<void> {
  const baselineRssKiB = process.resourceUsage().maxRSS;
  const publicKey = createPublicKey(publicKeyPem);
  const start = process.hrtime.bigint();
  const input = createReadStream(file, { highWaterMark: 1 << 20 });
  const lines = options.reader === 'readline' ? createInterface({ input, crlfDelay: Infinity }) : splitLines(input);
  const report = await verifyJournal(lines, publicKey, options.workers === undefined ? {} : { workers: options.workers });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const result: ChildResult = {
    ok: report.ok,
    kind: report.failure?.kind,
    events: report.events,
    seals: report.seals,
    bytes: report.bytes,
    seconds,
    baselineRssKiB,
    maxRssKiB: process.resourceUsage().maxRSS,
  };
  process.stdout.write(JSON.stringify(result) + '\n');
}

function runChild(file: string, publicKeyPem: string, options: VerifyChildOptions): ChildResult {
  const self = fileURLToPath(import.meta.url);
  const args = ['--import', 'tsx', self, '--verify-child', file, options.reader, String(options.workers ?? 'default')];
  const child = spawnSync(process.execPath, args, {
    input: publicKeyPem,
    encoding: 'utf8',
    maxBuffer: 1 << 20,
  });
  if (child.status !== 0) throw new Error(`verify child failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as ChildResult;
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dir: { type: 'string', default: '.oncegate/bench' },
      events: { type: 'string', default: '1000000' },
      'seal-every': { type: 'string', default: '10000' },
      /** Worker threads for verifyJournal; default: its own rule. */
      workers: { type: 'string' },
      /** How the verify child splits the file into lines: chunks (splitLines) or readline. */
      reader: { type: 'string', default: 'chunks' },
    },
  });
  const dir = resolve(values.dir!, `journal-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const total = Number(values.events);
  const sealEvery = Number(values['seal-every']);
  const reader = values.reader === 'readline' ? 'readline' : 'chunks';
  const verifyOptions: VerifyChildOptions = { reader, workers: values.workers === undefined ? undefined : Number(values.workers) };
  const sizes = total > 250_000 ? [250_000, total] : [total];
  process.stdout.write(
    `Journal verify benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ` +
      `${Math.round(totalmem() / 2 ** 30)} GiB, ${STREAMS} streams, a seal about every ${sealEvery.toLocaleString('en-US')} events\n`,
  );
  try {
    const rows = [];
    for (const events of sizes) {
      const file = join(dir, `journal-${events}.ndjson`);
      const generated = generate(file, events, sealEvery);
      const size = statSync(file).size;
      const result = runChild(file, generated.publicKeyPem, verifyOptions);
      rows.push({
        events: result.events.toLocaleString('en-US'),
        'file MB': (size / 1e6).toFixed(1),
        seals: result.seals,
        ok: result.ok ? 'yes' : `no (${result.kind})`,
        'verify s': result.seconds.toFixed(2),
        'events/s': rate(result.events, result.seconds),
        'MB/s': (result.bytes / 1e6 / result.seconds).toFixed(1),
        'child RSS before MiB': (result.baselineRssKiB / 1024).toFixed(0),
        'peak RSS MiB': (result.maxRssKiB / 1024).toFixed(0),
        'generate s': generated.seconds.toFixed(1),
      });
      rmSync(file, { force: true });
    }
    printTable('verify an NDJSON export (child process: readline over the file, verifyJournal, maxRSS)', rows);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--verify-child' && process.argv[1] === fileURLToPath(import.meta.url)) {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const workers = process.argv[5] === 'default' ? undefined : Number(process.argv[5]);
  await verifyChild(process.argv[3]!, Buffer.concat(chunks).toString('utf8'), {
    reader: process.argv[4] === 'readline' ? 'readline' : 'chunks',
    workers,
  });
}
