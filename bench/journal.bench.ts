import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto';
import { closeSync, createReadStream, mkdirSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ulid } from 'ulid';
import { formatEventLine, formatHeader, publicKeyId, splitLines, verifyJournal, verifyJournalFile } from '@oncegate/journal';
import {
  fingerprintIndex,
  journalFileSource,
  openExecutions,
  possibleDuplicateIntentsProjection,
  runProjection,
  runsByActor,
  type AnyProjection,
} from '@oncegate/projections';
import { JournalBuilder } from '../libs/journal/src/testing/journal-builder';
import { ACCEPTED_METADATA, ACCEPTED_PAYLOAD } from './fixtures';
import { machineLine, printTable, rate } from './table';

const payload = ACCEPTED_PAYLOAD;
const metadata = ACCEPTED_METADATA;
const STREAMS = 5000;

export type JournalShape = 'executions' | 'uniform';

/**
 * Writes an export of `events` events with a seal about every `sealEvery`; returns the key to verify with.
 * `executions` (default): interleaved execution lifecycles as the gateway appends them (`ExecutionSimulator`),
 * so the projections do real work. `uniform`: the earlier shape, one ~1 KB ExecutionAccepted-like payload
 * on every event of 5000 plain streams (not parseable as executions).
 */
export function generate(
  file: string,
  events: number,
  sealEvery: number,
  shape: JournalShape = 'executions',
): { publicKeyPem: string; seconds: number } {
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
  let appendNext: () => void;
  if (shape === 'uniform') {
    const types = ['ExecutionAccepted', 'Dispatched', 'OutcomeObserved'];
    let n = 0;
    appendNext = () => void builder.append(`execution-${n % STREAMS}`, types[n++ % 3]!, payload, metadata);
  } else {
    const simulator = new ExecutionSimulator(builder);
    appendNext = () => simulator.appendNext();
  }
  while (builder.head < events) {
    // One slot is kept free for the seal event itself (plus one concurrent append before it).
    if (builder.head > 0 && builder.head % sealEvery === 0 && builder.head + 2 <= events) {
      builder.seal([appendNext]);
      continue;
    }
    if (builder.head === events - 1) {
      builder.seal();
      if (builder.head === events) break;
    }
    appendNext();
  }
  writeSync(fd, chunk);
  closeSync(fd);
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    seconds: Number(process.hrtime.bigint() - start) / 1e9,
  };
}

/** Small deterministic PRNG (mulberry32), so every run writes the same journal. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ACTORS = Array.from({ length: 40 }, (_, i) => `agent:bot-${i}`);
const TOOLS = ['deploy_release', 'create_invoice', 'send_email', 'restart_service', 'transfer_funds', 'open_ticket', 'rotate_key', 'scale_pool'];
const CLASSES = ['irreversible', 'idempotent', 'compensatable'];

/** Which events an execution still has to append, in order. */
interface LiveExecution {
  readonly executionId: string;
  readonly stream: string;
  readonly actor: string;
  readonly sessionId: string;
  readonly steps: Array<(at: string) => { type: string; data: unknown }>;
  caused: string | null;
}

/**
 * Interleaved execution lifecycles shaped like libs/domain/src/events.ts: an `intent-<fingerprint>` claim,
 * then ExecutionAccepted (record, fingerprint, intent scope, correlation), ExecutionAuthorized, Dispatched,
 * OutcomeObserved (~90%, then ResultDelivered) or OutcomeUnknown (left open), and RetryAttached now and then.
 * About 1,500 executions are in flight at once; ~4% of new executions repeat a recent intent body under a new
 * run (what possible-duplicate-intents looks for).
 */
class ExecutionSimulator {
  private readonly random = prng(0x5eed);
  private readonly live: LiveExecution[] = [];
  private readonly recentBodies: Array<{ actor: string; tool: string; args: Record<string, unknown> }> = [];
  private started = 0;

  constructor(private readonly builder: JournalBuilder) {}

  appendNext(): void {
    if (this.live.length < 1500 || this.random() < 0.02) this.start();
    const index = Math.floor(this.random() * this.live.length);
    const execution = this.live[index]!;
    const at = this.isoAt(this.builder.head + 1);
    const step = execution.steps.shift()!;
    const { type, data } = step(at);
    const eventId = this.uuid();
    let stream = execution.stream;
    let body = data;
    if (type === 'IntentClaimed') {
      const { stream: claimStream, ...claim } = data as { stream: string };
      stream = claimStream;
      body = claim;
    }
    const metadata =
      type === 'IntentClaimed'
        ? { eventId, actor: execution.actor, recordedAt: at, schemaVersion: 1 }
        : {
            eventId,
            executionId: execution.executionId,
            causationId: execution.caused,
            correlation: { jsonRpcId: Math.floor(this.random() * 1000), sessionId: execution.sessionId, transport: 'streamable-http' },
            actor: execution.actor,
            recordedAt: at,
            schemaVersion: 1,
          };
    this.builder.append(stream, type, body, metadata);
    execution.caused = eventId;
    if (execution.steps.length === 0) {
      this.live[index] = this.live[this.live.length - 1]!;
      this.live.pop();
    }
  }

  private start(): void {
    const r = this.random;
    this.started += 1;
    const executionId = `ex_${this.ulid()}`;
    const repeat = this.recentBodies.length > 0 && r() < 0.04;
    const body = repeat
      ? this.recentBodies[Math.floor(r() * this.recentBodies.length)]!
      : {
          actor: ACTORS[Math.floor(r() * ACTORS.length)]!,
          tool: TOOLS[Math.floor(r() * TOOLS.length)]!,
          args: { region: ['us-east-1', 'eu-west-1', 'ap-south-1'][Math.floor(r() * 3)]!, service: `svc-${Math.floor(r() * 500)}`, amount: Math.floor(r() * 100000) / 100, note: 'ünïcode ✓ "quoted"' },
        };
    if (!repeat) {
      this.recentBodies.push(body);
      if (this.recentBodies.length > 200) this.recentBodies.shift();
    }
    const runId = `run-${this.started.toString(36)}-${Math.floor(r() * 1e6).toString(36)}`;
    const scope = r() < 0.8 ? { kind: 'run', runId } : { kind: 'actor' };
    const intentScope = scope.kind === 'run' ? `run:${runId}` : 'actor';
    const record = {
      actor: body.actor,
      tool: body.tool,
      channel: 'http',
      target: `${body.tool.replace('_', '-')}.internal.example/api`,
      credential_ref: `${body.tool}-service`,
      method: 'POST',
      arguments: body.args,
      intent_scope: intentScope,
    };
    const hex = createHash('sha256').update(JSON.stringify(record)).digest('hex');
    const fingerprint = `hmac-sha256:k1:${hex}`;
    const sessionId = this.uuid();
    const attemptPolicy = { maxAttempts: 3, attemptTimeoutMs: 30000, markerBeforeWork: false };
    const steps: LiveExecution['steps'] = [
      (at) => ({ type: 'IntentClaimed', data: { stream: `intent-k1-${hex}`, executionId, fingerprint, claimedAt: at } }),
      (at) => ({
        type: 'ExecutionAccepted',
        data: {
          executionId,
          record,
          fingerprint,
          operationClass: CLASSES[Math.floor(r() * CLASSES.length)],
          intentScope: scope,
          toolName: body.tool,
          windowEndsAt: null,
          redeliveryGraceMs: 60000,
          attemptPolicy,
          correlation: { jsonRpcId: 7, sessionId, transport: 'streamable-http' },
          acceptedAt: at,
          argumentsRef: `sealed:${hex.slice(0, 24)}`,
        },
      }),
      (at) => ({ type: 'ExecutionAuthorized', data: { basis: 'session_grant', authorizedAt: at } }),
      (at) => ({ type: 'Dispatched', data: { attempt: 1, dispatcherId: 'dispatcher-http-1', idempotencyKey: executionId, dispatchedAt: at } }),
    ];
    const retry = (at: string) => ({
      type: 'RetryAttached',
      data: { correlation: { jsonRpcId: 8, sessionId, transport: 'streamable-http' }, returned: 'pending', replayed: false, attachedAt: at },
    });
    if (r() < 0.1) steps.splice(2, 0, retry);
    if (r() < 0.9) {
      const outcome = r() < 0.95 ? 'succeeded' : 'failed';
      steps.push(
        (at) => ({
          type: 'OutcomeObserved',
          data: { attempt: 1, outcome, source: 'response', targetStatus: outcome === 'succeeded' ? 200 : 500, exitCode: null, resultRef: `sealed:r-${hex.slice(0, 16)}`, resultDigest: `sha256:${hex}`, observedAt: at },
        }),
        (at) => ({ type: 'ResultDelivered', data: { correlation: { jsonRpcId: 7, sessionId, transport: 'streamable-http' }, replayed: false, deliveredAt: at } }),
      );
    } else {
      steps.push((at) => ({ type: 'OutcomeUnknown', data: { attempt: 1, reason: 'timeout_after_send', observedAt: at } }));
    }
    this.live.push({ executionId, stream: `execution-${executionId}`, actor: body.actor, sessionId, steps, caused: null });
  }

  /** A canonical upper-case ULID, its randomness from the seeded generator so every run builds the same journal. */
  private ulid(): string {
    return ulid(Date.UTC(2026, 0, 1) + this.builder.head * 1000, this.random);
  }

  private uuid(): string {
    const hex = () => Math.floor(this.random() * 0x10000).toString(16).padStart(4, '0');
    return `${hex()}${hex()}-${hex()}-7${hex().slice(1)}-a${hex().slice(1)}-${hex()}${hex()}${hex()}`;
  }

  /** The builder's default clock: one event per second from 2026-01-01. */
  private isoAt(position: number): string {
    return new Date(Date.UTC(2026, 0, 1) + position * 1000).toISOString();
  }
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
  /**
   * `file` (default): `verifyJournalFile`, as the CLI verifies: raw byte blocks to the workers. `chunks`: the
   * journal's `splitLines` over the file stream, then `verifyJournal` (lines as strings); `readline`: node:readline.
   */
  reader: 'file' | 'chunks' | 'readline';
  /** Passed to verifyJournal; undefined: its default. */
  workers: number | undefined;
}

/** Runs inside a fresh process so that the generator's memory does not count. */
export async function verifyChild(file: string, publicKeyPem: string, options: VerifyChildOptions): Promise<void> {
  const baselineRssKiB = process.resourceUsage().maxRSS;
  const publicKey = createPublicKey(publicKeyPem);
  const start = process.hrtime.bigint();
  const verifyOptions = options.workers === undefined ? {} : { workers: options.workers };
  let report;
  if (options.reader === 'file') {
    report = await verifyJournalFile(file, publicKey, verifyOptions);
  } else {
    const input = createReadStream(file, { highWaterMark: 1 << 20 });
    const lines = options.reader === 'readline' ? createInterface({ input, crlfDelay: Infinity }) : splitLines(input);
    report = await verifyJournal(lines, publicKey, verifyOptions);
  }
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

const PROJECTIONS: Readonly<Record<string, AnyProjection>> = {
  fingerprintIndex,
  runsByActor,
  openExecutions,
  possibleDuplicateIntentsProjection,
};

interface ProjectChildResult {
  folded: number;
  rows: number;
  seconds: number;
  baselineRssKiB: number;
  maxRssKiB: number;
}

/** Rebuilds one built-in projection over the export, in a fresh process (its RSS is the projection's own). */
async function projectChild(file: string, name: string): Promise<void> {
  const baselineRssKiB = process.resourceUsage().maxRSS;
  const projection = PROJECTIONS[name];
  if (projection === undefined) throw new Error(`unknown projection ${name}`);
  const start = process.hrtime.bigint();
  const result = await runProjection({ projection, source: journalFileSource(file), rebuild: true });
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const out: ProjectChildResult = {
    folded: result.events,
    rows: result.rows.length,
    seconds,
    baselineRssKiB,
    maxRssKiB: process.resourceUsage().maxRSS,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
}

function runProjectChild(file: string, name: string): ProjectChildResult {
  const self = fileURLToPath(import.meta.url);
  const child = spawnSync(process.execPath, ['--import', 'tsx', self, '--project-child', file, name], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (child.status !== 0) throw new Error(`projection child failed: ${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').pop()!) as ProjectChildResult;
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
      /** How the verify child reads the file: file (verifyJournalFile, as the CLI), chunks (splitLines) or readline. */
      reader: { type: 'string', default: 'file' },
      /** executions (default) or uniform: see `generate`. */
      shape: { type: 'string', default: 'executions' },
      /** Skip the projection rebuilds. */
      'no-projections': { type: 'boolean', default: false },
    },
  });
  const dir = resolve(values.dir!, `journal-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  const total = Number(values.events);
  const sealEvery = Number(values['seal-every']);
  const reader = values.reader === 'readline' ? 'readline' : values.reader === 'chunks' ? 'chunks' : 'file';
  const shape: JournalShape = values.shape === 'uniform' ? 'uniform' : 'executions';
  const verifyOptions: VerifyChildOptions = { reader, workers: values.workers === undefined ? undefined : Number(values.workers) };
  const sizes = total > 250_000 ? [250_000, total] : [total];
  process.stdout.write(
    `Journal verify benchmark — ${machineLine()}, ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ` +
      `${Math.round(totalmem() / 2 ** 30)} GiB, ` +
      (shape === 'uniform' ? `${STREAMS} streams of uniform ~1 KB events` : 'interleaved execution lifecycles (+ intent claims)') +
      `, a seal about every ${sealEvery.toLocaleString('en-US')} events\n`,
  );
  try {
    const rows = [];
    const projectionRows = [];
    for (const events of sizes) {
      const file = join(dir, `journal-${events}.ndjson`);
      const generated = generate(file, events, sealEvery, shape);
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
      // The projections run once, over the largest journal.
      if (events === sizes[sizes.length - 1] && !values['no-projections'] && shape === 'executions') {
        for (const name of Object.keys(PROJECTIONS)) {
          const projected = runProjectChild(file, name);
          projectionRows.push({
            projection: name,
            'journal events': events.toLocaleString('en-US'),
            'events folded': projected.folded.toLocaleString('en-US'),
            rows: projected.rows.toLocaleString('en-US'),
            'rebuild s': projected.seconds.toFixed(2),
            'journal events/s': rate(events, projected.seconds),
            'child RSS before MiB': (projected.baselineRssKiB / 1024).toFixed(0),
            'peak RSS MiB': (projected.maxRssKiB / 1024).toFixed(0),
          });
        }
      }
      rmSync(file, { force: true });
    }
    const how = reader === 'file' ? 'verifyJournalFile' : `${reader === 'readline' ? 'readline' : 'splitLines'} over the file, verifyJournal`;
    const workers = verifyOptions.workers === undefined ? 'default workers' : `${verifyOptions.workers} worker(s)`;
    printTable(`verify an NDJSON export (child process: ${how} with ${workers}, maxRSS)`, rows);
    printTable(
      'projection rebuild events/s (child process per projection: runProjection over journalFileSource, rebuild, maxRSS)',
      projectionRows,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (process.argv[2] === '--verify-child') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    const workers = process.argv[5] === 'default' ? undefined : Number(process.argv[5]);
    await verifyChild(process.argv[3]!, Buffer.concat(chunks).toString('utf8'), {
      reader: process.argv[4] === 'readline' ? 'readline' : process.argv[4] === 'chunks' ? 'chunks' : 'file',
      workers,
    });
  } else if (process.argv[2] === '--project-child') {
    await projectChild(process.argv[3]!, process.argv[4]!);
  }
}
