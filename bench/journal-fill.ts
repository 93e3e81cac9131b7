import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { dirname, join } from 'node:path';
import { ulid } from 'ulid';
import { v7 as uuidv7 } from 'uuid';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { runStream, sessionStream } from '@oncegate/domain';
import type { AppendManyEntry, EventToAppend, RecordedEvent } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { SCHEMA_VERSION } from '../libs/event-store-sqlite/src/schema';
import { SEAL_STREAM } from '@oncegate/journal';
import { contractsYaml, gatewayYaml, ROOT, startGatewayProcess } from './gateway-support';

/**
 * A gateway data folder whose journal already holds many completed executions, built once and kept in a cache.
 *
 * How it is built, using only the gateway's outside surfaces and the store's API:
 * 1. The gateway (`bin/oncegate.mjs start`) runs on a fresh folder with the bench's config, and one MCP session
 *    makes two `set_config` calls and a `tools/list`: the first call is a real completed and delivered execution
 *    (its intent claim, ExecutionAccepted, ExecutionAuthorized, Dispatched, OutcomeObserved and ResultDelivered —
 *    delivery proven by the session's next message), recorded by the gateway's own code, with the session's
 *    SessionStarted and RunStarted. The gateway stops.
 * 2. Those events are the template. Each filled execution is a copy with its own execution id (a ULID of its
 *    time), fingerprint (so its own `intent-` claim stream), event ids (UUIDv7, causation links kept), sealed
 *    refs, argument value, JSON-RPC id and timestamps (one execution every 2 s, ending an hour before the fill);
 *    every 100 executions share one session (its SessionStarted and RunStarted). They are appended with the
 *    store's `appendMany` (synchronous=NORMAL), which links the hash chain as for any append. The sealed
 *    arguments and results the copies name are not written: nothing reads them at start, and only a retry of
 *    one of those executions would.
 * 3. Every consumer checkpoint of the store is moved to the head, as a gateway that handled those executions
 *    leaves them (the services' subscriptions and the attempt sweeper's low-water mark).
 * 4. The gateway starts once more on the folder and stops: its sealer seals the filled events (as it would
 *    have while they were appended), so a measured start finds a sealed journal.
 *
 * The folder is kept under `<cacheRoot>/<key>`, the key naming the fill's format version, the store's schema
 * version, a digest of the domain's event and stream definitions, and the number of executions; a change to
 * any of them builds a new one.
 */

/** Bump when the fill's output changes. */
const FILL_FORMAT = 1;
const SESSION_EVERY = 100;
const SPACING_MS = 2000;
const BATCH = 1000;
const TEMPLATE_VALUE = 'template-value-0f3a9c';

export interface FillManifest {
  readonly key: string;
  readonly executions: number;
  readonly sessions: number;
  readonly events: number;
  readonly head: number;
  readonly templateSeconds: number;
  readonly fillSeconds: number;
  /** The start after the fill: from spawn to listening, then the stop (which seals what is unsealed). */
  readonly settleStartMs: number;
  readonly settleStopMs: number;
  readonly sealedTo: number;
  readonly fileBytes: number;
  readonly builtAt: string;
}

export interface FilledFolder {
  /** The cached data folder: copy it, never start a gateway on it. */
  readonly dataDir: string;
  readonly manifest: FillManifest;
  readonly cached: boolean;
}

export function fillKey(executions: number): string {
  const digest = createHash('sha256');
  for (const file of ['libs/domain/src/events.ts', 'libs/domain/src/streams.ts', 'libs/event-store-sqlite/src/schema.ts']) {
    digest.update(readFileSync(join(ROOT, file)));
  }
  return `gateway-journal-f${FILL_FORMAT}-s${SCHEMA_VERSION}-${digest.digest('hex').slice(0, 12)}-${executions}`;
}

/** The cached folder for `executions`, built first when absent. `targetUrl`: a running demo target. */
export async function filledDataFolder(options: {
  readonly executions: number;
  readonly cacheRoot: string;
  readonly targetUrl: string;
  readonly log: (line: string) => void;
}): Promise<FilledFolder> {
  const key = fillKey(options.executions);
  const home = join(options.cacheRoot, key);
  const manifestFile = join(home, 'manifest.json');
  if (existsSync(manifestFile)) {
    return { dataDir: join(home, 'data'), manifest: JSON.parse(readFileSync(manifestFile, 'utf8')) as FillManifest, cached: true };
  }
  const staging = `${home}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    const manifest = await build(staging, key, options);
    writeFileSync(join(staging, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
    rmSync(home, { recursive: true, force: true });
    renameSync(staging, home);
    return { dataDir: join(home, 'data'), manifest, cached: false };
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * A copy of a cached data folder for one run at `to`: the spare copy made after the last run when there is one
 * (moved, which takes no time on the same file system), otherwise a copy made now. Returns how it came.
 */
export function runCopyOf(filled: FilledFolder, to: string): { seconds: number; spare: boolean } {
  const start = process.hrtime.bigint();
  const seconds = () => Number(process.hrtime.bigint() - start) / 1e9;
  rmSync(to, { recursive: true, force: true });
  mkdirSync(dirname(to), { recursive: true });
  const spare = spareOf(filled);
  if (existsSync(spare)) {
    try {
      renameSync(spare, to);
      return { seconds: seconds(), spare: true };
    } catch {
      rmSync(spare, { recursive: true, force: true });
    }
  }
  copyFolder(filled.dataDir, to);
  return { seconds: seconds(), spare: false };
}

/** Copies the cached folder beside it for the next run (after the measurements, so the copy disturbs none). */
export function prepareSpareCopy(filled: FilledFolder): number {
  const start = process.hrtime.bigint();
  const spare = spareOf(filled);
  if (!existsSync(spare)) {
    const partial = `${spare}.partial-${process.pid}`;
    copyFolder(filled.dataDir, partial);
    renameSync(partial, spare);
  }
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const spareOf = (filled: FilledFolder) => join(dirname(filled.dataDir), 'spare-data');

function copyFolder(from: string, to: string): void {
  rmSync(to, { recursive: true, force: true });
  cpSync(from, to, { recursive: true, filter: (source) => !source.endsWith('-shm') });
}

async function build(
  staging: string,
  key: string,
  options: { readonly executions: number; readonly targetUrl: string; readonly log: (line: string) => void },
): Promise<FillManifest> {
  const dataDir = join(staging, 'data');
  const configFile = join(staging, 'oncegate.yaml');
  writeFileSync(join(staging, 'tools.yaml'), contractsYaml(options.targetUrl));
  writeFileSync(configFile, gatewayYaml(staging, 'NORMAL'));

  const templateStart = process.hrtime.bigint();
  const templateId = await recordTemplateCall(configFile);
  const templateSeconds = Number(process.hrtime.bigint() - templateStart) / 1e9;

  let now = new Date();
  const store = openSqliteEventStore({ file: join(dataDir, 'events.db'), synchronous: 'NORMAL', clock: () => now });
  let fillSeconds: number;
  let events = 0;
  let head: number;
  try {
    const template = await readTemplate(store, templateId);
    const base = Date.parse(template.acceptedAt);
    const first = base - 3_600_000 - options.executions * SPACING_MS;
    const fillStart = process.hrtime.bigint();
    let lastReport = fillStart;
    for (let done = 0; done < options.executions; ) {
      const entries: AppendManyEntry[] = [];
      const end = Math.min(options.executions, done + BATCH);
      for (let n = done; n < end; n += 1) {
        const at = first + n * SPACING_MS;
        for (const entry of template.execution(n, at)) {
          entries.push(entry);
          events += entry.events.length;
        }
      }
      now = new Date(first + (end - 1) * SPACING_MS + 50);
      await store.appendMany(entries);
      done = end;
      const tick = process.hrtime.bigint();
      if (Number(tick - lastReport) > 60e9 || done === options.executions) {
        lastReport = tick;
        const seconds = Number(tick - fillStart) / 1e9;
        options.log(`  filled ${done.toLocaleString('en-US')} executions (${events.toLocaleString('en-US')} events) in ${seconds.toFixed(0)} s`);
      }
    }
    fillSeconds = Number(process.hrtime.bigint() - fillStart) / 1e9;
    head = await store.headPosition();
    // As a gateway that handled every one of these executions leaves them: each consumer at the head.
    for (const consumer of checkpointConsumers(join(dataDir, 'events.db'))) await store.storeCheckpoint(consumer, head);
  } finally {
    await store.close();
  }

  options.log('  starting the gateway once on the filled folder (its sealer seals the filled events when it stops)');
  const settle = await startGatewayProcess(configFile);
  const stopStart = process.hrtime.bigint();
  await settle.server.stop(30 * 60_000);
  const settleStopMs = Number(process.hrtime.bigint() - stopStart) / 1e6;
  const check = openSqliteEventStore({ file: join(dataDir, 'events.db'), readOnly: true });
  let sealedTo = 0;
  try {
    const [seal] = await check.readStream(SEAL_STREAM, { direction: 'backwards', maxCount: 1 });
    sealedTo = (seal?.data as { toPosition?: number } | undefined)?.toPosition ?? 0;
  } finally {
    await check.close();
  }
  // Only the data folder is kept: the config names this staging folder and a target that is gone.
  rmSync(join(dataDir, 'instances'), { recursive: true, force: true });
  rmSync(configFile);
  rmSync(join(staging, 'tools.yaml'));
  return {
    key,
    executions: options.executions,
    sessions: Math.ceil(options.executions / SESSION_EVERY),
    events,
    head,
    templateSeconds,
    fillSeconds,
    settleStartMs: settle.startMs,
    settleStopMs,
    sealedTo,
    fileBytes: folderBytes(dataDir),
    builtAt: new Date().toISOString(),
  };
}

/** Consumers with a checkpoint in the store file (the `checkpoints` table of the store's schema). */
function checkpointConsumers(file: string): string[] {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return (db.prepare('SELECT consumer FROM checkpoints').all() as Array<{ consumer: string }>).map((row) => row.consumer);
  } finally {
    db.close();
  }
}

function folderBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += statSync(join(entry.parentPath, entry.name)).size;
  }
  return total;
}

/** Runs the gateway on the staging folder for one delivered call; returns that call's execution id. */
async function recordTemplateCall(configFile: string): Promise<string> {
  const gateway = await startGatewayProcess(configFile);
  try {
    const client = new Client({ name: 'bench-template', version: '0.1.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(gateway.url), { requestInit: { headers: { authorization: `Bearer ${gateway.token}` } } }));
    const call = async (value: string) => {
      const result = await client.callTool({ name: 'set_config', arguments: { name: 'bench.entry', value } });
      const execution = (result._meta as Record<string, { id?: string; state?: string }> | undefined)?.['io.oncegate/execution'];
      if (execution?.id === undefined || execution.state !== 'completed') throw new Error(`the template call did not complete: ${JSON.stringify(result)}`);
      return execution.id;
    };
    const id = await call(TEMPLATE_VALUE);
    // The session's next messages prove the first answer was received, so the gateway records its delivery.
    await call(`${TEMPLATE_VALUE}-next`);
    await client.listTools();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await client.close();
    return id;
  } finally {
    await gateway.server.stop();
  }
}

const EXPECTED_TYPES = ['ExecutionAccepted', 'ExecutionAuthorized', 'Dispatched', 'OutcomeObserved', 'ResultDelivered'];

interface Template {
  readonly acceptedAt: string;
  /** The appends of execution `n` accepted at `at` (ms): its session's first when `n` starts a session. */
  execution(n: number, at: number): AppendManyEntry[];
}

/** A template event's data and metadata, cut into literal text and the fields each copy fills in. */
interface Pattern {
  readonly type: string;
  readonly stream: 'session' | 'intent' | 'execution' | 'run';
  readonly data: Array<string | Slot>;
  readonly metadata: Array<string | Slot>;
  readonly eventIndex: number;
}

type Slot = { readonly kind: 'event'; readonly index: number } | { readonly kind: 'time'; readonly offset: number } | { readonly kind: 'ref'; readonly index: number } | { readonly kind: 'ulid' | 'hex' | 'session' | 'value' | 'rpc' };

async function readTemplate(store: ReturnType<typeof openSqliteEventStore>, executionId: string): Promise<Template> {
  const executionEvents = await store.readStream(`execution-${executionId}`);
  const types = executionEvents.map((event) => event.type);
  if (JSON.stringify(types) !== JSON.stringify(EXPECTED_TYPES)) {
    throw new Error(`the template execution left ${types.join(', ')}, not ${EXPECTED_TYPES.join(', ')}`);
  }
  const accepted = executionEvents[0]!.data as { fingerprint: string; acceptedAt: string; runId: string; correlation: { sessionId: string } };
  const hex = accepted.fingerprint.slice(accepted.fingerprint.lastIndexOf(':') + 1);
  const sessionId = accepted.correlation.sessionId;
  const claimStreamId = await findStream(store, (event) => event.type === 'IntentClaimed' && (event.data as { executionId?: string }).executionId === executionId);
  const [claim] = await store.readStream(claimStreamId);
  const [session] = await store.readStream(sessionStream(sessionId));
  const [run] = await store.readStream(runStream(accepted.runId));
  if (claim === undefined || session === undefined || run === undefined) throw new Error('the template call left no claim, session or run event');
  const recorded: Array<{ event: RecordedEvent; stream: Pattern['stream'] }> = [
    { event: session, stream: 'session' },
    { event: claim, stream: 'intent' },
    ...executionEvents.map((event) => ({ event, stream: 'execution' as const })),
    { event: run, stream: 'run' },
  ];
  const ulidPart = executionId.slice(3);
  const base = Date.parse(accepted.acceptedAt);
  const refs: string[] = [];
  const cut = (json: string): Array<string | Slot> => {
    const slots: Slot[] = [];
    const mark = (slot: Slot) => `\u0001${slots.push(slot) - 1}\u0001`;
    let text = json;
    recorded.forEach(({ event }, index) => {
      text = text.split(event.id).join(mark({ kind: 'event', index }));
    });
    text = text.split(ulidPart).join(mark({ kind: 'ulid' }));
    text = text.split(hex).join(mark({ kind: 'hex' }));
    text = text.split(sessionId).join(mark({ kind: 'session' }));
    text = text.split(TEMPLATE_VALUE).join(mark({ kind: 'value' }));
    text = text.replace(/sealed_[0-9a-f-]{36}/g, (ref) => {
      if (!refs.includes(ref)) refs.push(ref);
      return mark({ kind: 'ref', index: refs.indexOf(ref) });
    });
    text = text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, (iso) => mark({ kind: 'time', offset: Date.parse(iso) - base }));
    text = text.replace(/"jsonRpcId":\d+/g, () => `"jsonRpcId":${mark({ kind: 'rpc' })}`);
    return text.split(/\u0001(\d+)\u0001/).map((part, i) => (i % 2 === 0 ? part : slots[Number(part)]!));
  };
  const patterns: Pattern[] = recorded.map(({ event, stream }, eventIndex) => ({
    type: event.type,
    stream,
    data: cut(JSON.stringify(event.data)),
    metadata: cut(JSON.stringify(event.metadata)),
    eventIndex,
  }));
  const streamPattern = (id: string) => id.split(hex).join('\u0001');
  const intentName = streamPattern(claimStreamId);

  let sessionOfGroup = '';
  return {
    acceptedAt: accepted.acceptedAt,
    execution(n, at) {
      const values = {
        ulid: ulid(at),
        hex: createHash('sha256').update(`bench-fill-${n}`).digest('hex'),
        session: '',
        value: `v-fill-${n}`,
        rpc: String((n % SESSION_EVERY) + 1),
        events: recorded.map((_, index) => uuidv7({ msecs: at + index })),
        refs: refs.map(() => `sealed_${uuidv7({ msecs: at })}`),
      };
      const startsSession = n % SESSION_EVERY === 0;
      if (startsSession) sessionOfGroup = uuidv7({ msecs: at });
      values.session = sessionOfGroup;
      const render = (parts: Array<string | Slot>): unknown => {
        let out = '';
        for (const part of parts) {
          if (typeof part === 'string') out += part;
          else if (part.kind === 'event') out += values.events[part.index];
          else if (part.kind === 'time') out += new Date(at + part.offset).toISOString();
          else if (part.kind === 'ref') out += values.refs[part.index];
          else out += values[part.kind];
        }
        return JSON.parse(out);
      };
      const event = (pattern: Pattern): EventToAppend => ({
        id: values.events[pattern.eventIndex]!,
        type: pattern.type,
        data: render(pattern.data),
        metadata: render(pattern.metadata) as Record<string, unknown>,
      });
      const entries: AppendManyEntry[] = [];
      const of = (stream: Pattern['stream']) => patterns.filter((pattern) => pattern.stream === stream).map(event);
      if (startsSession) entries.push({ streamId: sessionStream(values.session), events: of('session'), expectedRevision: 'no_stream' });
      entries.push({ streamId: intentName.split('\u0001').join(values.hex), events: of('intent'), expectedRevision: 'no_stream' });
      entries.push({ streamId: `execution-ex_${values.ulid}`, events: of('execution'), expectedRevision: 'no_stream' });
      if (startsSession) entries.push({ streamId: runStream(`session:${values.session}`), events: of('run'), expectedRevision: 'no_stream' });
      return entries;
    },
  };
}

async function findStream(store: ReturnType<typeof openSqliteEventStore>, match: (event: RecordedEvent) => boolean): Promise<string> {
  const page = await store.readAll({ maxCount: 1000 });
  const found = page.events.find(match);
  if (found === undefined) throw new Error('the template call left no intent claim');
  return found.streamId;
}
