import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { DemoTargetProcess } from '../support/demo-target-process';
import type { GatewayProcess } from '../support/gateway-process';
import type { JournalFollower } from '../support/journal-follower';
import { DEFAULT_ACCEPT, frameAt, type FuzzFrame } from './frames';

export interface FuzzOptions {
  readonly frames: number;
  readonly seed: number;
  /** Run only this frame of the seed's sequence (to replay a finding). */
  readonly only?: number;
  /** Every request must be answered within this (a GET stream: its headers). Default 5 s. */
  readonly answerBoundMs?: number;
  /** Quiet time before each memory reading. Default 3 s. */
  readonly settleMs?: number;
  /** The gateway's `max_request_bytes`. */
  readonly maxRequestBytes: number;
  readonly log?: (line: string) => void;
}

export interface FuzzWorld {
  readonly gateway: GatewayProcess;
  readonly target: DemoTargetProcess;
  readonly journal: JournalFollower;
}

interface Answer {
  readonly status: number | null;
  /** Why there was no answer within the bound, or the connection failed. */
  readonly failure?: string;
  readonly sessionId?: string;
}

export type KindRow = {
  kind: string;
  frames: number;
  '2xx': number;
  '4xx': number;
  '5xx': number;
  'no answer': number;
  dispatched: number;
};

export interface FuzzFinding {
  readonly frame: number;
  readonly kind: string;
  readonly what: string;
  readonly excerpt: string;
}

export interface FuzzReport {
  readonly seed: number;
  readonly frames: number;
  readonly rows: KindRow[];
  readonly findings: FuzzFinding[];
  /** `ExecutionAccepted` appended during the run (none is allowed). */
  readonly executionsAccepted: number;
  /** Requests the target received during the run (none is allowed). */
  readonly targetRequests: number;
  readonly sessionsOpened: number;
  /** Initializes without a session that got no session id back (refused). */
  readonly initializesRefused: number;
  /** Before any frame (a cold process). */
  readonly rssBaselineKiB: number;
  /**
   * After the first tenth of the frames and a settle: the process with every path warmed and its caches (live
   * sessions up to the per-agent cap) filled. Growth is measured from here, so a leak shows and a full cache
   * does not.
   */
  readonly rssWarmKiB: number;
  readonly rssAfterKiB: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The gateway's resident set, from /proc (Linux). */
export function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
}

/**
 * One raw HTTP request with node:http, so that any header and any bytes can be sent; resolves with the status
 * once the whole answer was read (for a GET: once its headers arrived), or with why not within the bound.
 */
function send(url: URL, method: string, headers: Record<string, string>, body: Buffer | undefined, boundMs: number, headersOnly: boolean): Promise<Answer> {
  return new Promise((resolve) => {
    const req = httpRequest(url, { method, headers: body ? { ...headers, 'content-length': String(body.length) } : headers, agent: false });
    const timer = setTimeout(() => {
      resolve({ status: null, failure: `no answer within ${boundMs} ms` });
      req.destroy();
    }, boundMs);
    req.on('response', (res) => {
      const sessionId = res.headers['mcp-session-id'];
      const answer = { status: res.statusCode ?? null, ...(typeof sessionId === 'string' ? { sessionId } : {}) };
      if (headersOnly) {
        clearTimeout(timer);
        resolve(answer);
        req.destroy();
        return;
      }
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        resolve(answer);
      });
      res.on('error', () => undefined);
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      // A 413 may close the connection while the rest of the body is still being written: that is an answer.
      resolve({ status: null, failure: error.message });
    });
    req.end(body);
  });
}

function frameExcerpt(frame: FuzzFrame): string {
  const body = frame.body === undefined ? '' : typeof frame.body === 'string' ? frame.body : `bytes ${Buffer.from(frame.body).toString('hex')}`;
  const text = `${frame.method} session=${frame.session} token=${frame.token} headers=${JSON.stringify(frame.headers)} ${body}`;
  return text.length > 240 ? `${text.slice(0, 240)}… (${text.length} chars)` : text;
}

/**
 * Sends generated frames one after another (a "same id twice" frame as two requests at once) to a running
 * gateway, and checks that each is answered within the bound and never with a 5xx, that nothing reaches the
 * target or the execution streams, and how the gateway's memory compares with its baseline afterwards.
 */
export async function runFuzz(world: FuzzWorld, options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => undefined);
  const bound = options.answerBoundMs ?? 5_000;
  const settle = options.settleMs ?? 5_000;
  const url = new URL(world.gateway.url);
  const token = world.gateway.devToken;
  const pid = world.gateway.child.pid!;

  const base = (extra: Record<string, string> = {}) => ({
    authorization: `Bearer ${token}`,
    accept: DEFAULT_ACCEPT,
    'content-type': 'application/json',
    'mcp-protocol-version': '2025-11-25',
    ...extra,
  });
  const initialize = async (): Promise<string> => {
    const body = Buffer.from(
      JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } } }),
    );
    const answer = await send(url, 'POST', base(), body, bound, false);
    if (answer.sessionId === undefined) throw new Error(`the fuzzer could not open its session: ${answer.status} ${answer.failure ?? ''}`);
    const initialized = Buffer.from(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    await send(url, 'POST', base({ 'mcp-session-id': answer.sessionId }), initialized, bound, false);
    return answer.sessionId;
  };

  const live = await initialize();
  const closed = await initialize();
  await send(url, 'DELETE', base({ 'mcp-session-id': closed }), undefined, bound, false);
  // Warm up the paths every frame takes, so the baseline is not the cost of code loaded on first use.
  const list = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  for (let i = 0; i < 50; i++) await send(url, 'POST', base({ 'mcp-session-id': live }), list, bound, false);
  await world.journal.catchUp();
  const targetBefore = (await world.target.effects()).requestsTotal;
  await sleep(settle);
  const rssBaselineKiB = rssKiB(pid);

  const rows = new Map<string, KindRow>();
  const findings: FuzzFinding[] = [];
  let executionsAccepted = 0;
  let sessionsOpened = 0;
  let initializesRefused = 0;
  const first = options.only ?? 0;
  const last = options.only === undefined ? options.frames : options.only + 1;
  const warmAt = first + Math.max(1, Math.floor((last - first) / 10));
  let rssWarmKiB = rssBaselineKiB;
  for (let index = first; index < last; index++) {
    if (index === warmAt) {
      await sleep(settle);
      rssWarmKiB = rssKiB(pid);
    }
    const frame = frameAt(options.seed, index);
    const row = rows.get(frame.kind) ?? { kind: frame.kind, frames: 0, '2xx': 0, '4xx': 0, '5xx': 0, 'no answer': 0, dispatched: 0 };
    rows.set(frame.kind, row);
    const headers: Record<string, string> = base();
    const session = { live, none: undefined, unknown: '3f2b8c1e-0d4a-4b7e-9c61-5a0f2e8d7b13', closed, malformed: '../../x y' }[frame.session];
    if (session !== undefined) headers['mcp-session-id'] = session;
    switch (frame.token) {
      case 'valid':
        break;
      case 'none':
        delete headers['authorization'];
        break;
      case 'unknown':
        headers['authorization'] = 'Bearer ogt_fuzz00000000000000000000000000000000000000';
        break;
      case 'malformed':
        headers['authorization'] = index % 2 === 0 ? 'Basic Zm9vOmJhcg==' : `Bearer ${'x'.repeat(4_000)}`;
        break;
      case 'lowercase_scheme':
        headers['authorization'] = `bearer ${token}`;
        break;
    }
    for (const [name, value] of Object.entries(frame.headers)) {
      if (value === null) delete headers[name];
      else headers[name] = value;
    }
    let body: Buffer | undefined;
    if (frame.body !== undefined) body = typeof frame.body === 'string' ? Buffer.from(frame.body, 'utf8') : Buffer.from(frame.body);
    if (frame.oversizeBy !== undefined && body !== undefined) body = Buffer.concat([body, Buffer.alloc(options.maxRequestBytes + frame.oversizeBy - body.length, 0x61), Buffer.from('"}}')]);
    if (frame.method !== 'POST') body = undefined;

    const copies = frame.twice ? 2 : 1;
    const answers = await Promise.all(Array.from({ length: copies }, () => send(url, frame.method, headers, body, bound, frame.method === 'GET')));
    for (const answer of answers) {
      row.frames += 1;
      if (answer.sessionId !== undefined && frame.session === 'none') sessionsOpened += 1;
      if (frame.session === 'none' && frame.kind === 'new session' && answer.sessionId === undefined) initializesRefused += 1;
      if (answer.status === null) {
        // An oversized body may be cut off by the 413 before the client finished writing it; that is refused, not hung.
        const refusedEarly = frame.kind === 'oversized body' && !/no answer within/.test(answer.failure ?? '');
        if (refusedEarly) row['4xx'] += 1;
        else {
          row['no answer'] += 1;
          findings.push({ frame: index, kind: frame.kind, what: `no answer: ${answer.failure}`, excerpt: frameExcerpt(frame) });
        }
      } else if (answer.status >= 500) {
        row['5xx'] += 1;
        findings.push({ frame: index, kind: frame.kind, what: `HTTP ${answer.status}`, excerpt: frameExcerpt(frame) });
      } else if (answer.status >= 400) row['4xx'] += 1;
      else row['2xx'] += 1;
    }
    const accepted = (await world.journal.catchUp()).filter((event) => event.type === 'ExecutionAccepted');
    if (accepted.length > 0) {
      executionsAccepted += accepted.length;
      row.dispatched += accepted.length;
      // Named by what was accepted: an append may come late, after a later frame than the one that caused it.
      const what = accepted.map((event) => {
        const data = event.data as { toolName?: string; record?: { arguments?: unknown } };
        return `${event.streamId} ${data.toolName ?? '?'} ${JSON.stringify(data.record?.arguments ?? null)}`;
      });
      findings.push({ frame: index, kind: frame.kind, what: `${accepted.length} ExecutionAccepted appended by the time it was answered: ${what.join('; ')}`, excerpt: frameExcerpt(frame) });
    }
    if ((index - first + 1) % 1_000 === 0) log(`${index - first + 1} frames, rss ${Math.round(rssKiB(pid) / 1024)} MiB, findings ${findings.length}`);
  }
  // Recovery or dispatch of anything accepted takes a moment: the target is asked after the settle period.
  await sleep(settle);
  const targetRequests = (await world.target.effects()).requestsTotal - targetBefore;
  const rssAfterKiB = rssKiB(pid);
  return {
    seed: options.seed,
    frames: last - first,
    rows: [...rows.values()].sort((a, b) => b.frames - a.frames),
    findings,
    executionsAccepted,
    targetRequests,
    sessionsOpened,
    initializesRefused,
    rssBaselineKiB,
    rssWarmKiB,
    rssAfterKiB,
  };
}
