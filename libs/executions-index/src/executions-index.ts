/**
 * Keeps the executions index current from the store's global order: reads the execution streams' events after the
 * index's checkpoint in batches, folds them with the domain's `evolve`, and writes the rows, the folds and the new
 * checkpoint in one transaction. One instance folds at a time across every process on the store (the store's
 * claim `executions-index`); the others stand by and take over when its claim runs out.
 */
import { executionIdOfStream, executionStream, type ExecutionId } from '@oncegate/domain';
import { LRUCache } from 'lru-cache';
import type { EventStore, ReadAllPage, RecordedEvent, Subscription } from '@oncegate/event-store';
import { foldBatch, executionIdsOf } from './fold-batch';
import { encodeCursor, limitOfQuery, type ExecutionsPage, type ExecutionsQuery, type IndexLag } from './executions-query';
import type { IndexTables } from './index-tables';
import { instantMs, type FoldedExecution } from './execution-row';

/** The store claim that makes one instance the folder. */
export const INDEX_CLAIM = 'executions-index';

const EXECUTION_STREAMS = { streamPrefixes: ['execution-'] };

/** Events heard and not yet folded, at most: past it (the index not folding here), they are let go and read later. */
const HEARD_LIMIT = 20_000;

/**
 * Folded states this instance wrote that it keeps, at most (the most recently written): enough for the executions
 * of the next batch that began in the last one; the rest come from the tables, or are folded again from their
 * streams. A state kept longer outlives V8's young generation and costs the old generation's collector
 * (docs/runtime.md, "Memory").
 */
const WRITTEN_LIMIT = 512;

export interface ExecutionsIndexOptions {
  readonly store: EventStore;
  readonly tables: IndexTables;
  /** This instance's name in the claim (unique per process). */
  readonly owner: string;
  /** Events read per batch (one transaction each). Default 1000. */
  readonly batchSize?: number;
  /** How long the claim lasts unless renewed; a dead folder is replaced after at most this. Default 30 s. */
  readonly claimTtlMs?: number;
  /** After the first new event, how long the live fold waits to gather more into one batch. Default 250 ms. */
  readonly settleMs?: number;
  /** How often a standby instance tries the claim, and the live fold looks without being woken. Default 5 s. */
  readonly pollMs?: number;
  readonly now?: () => number;
  /** A failed fold (the next poll tries again). */
  readonly onError?: (error: unknown) => void;
}

/** What one catch-up did. */
export interface CatchUp {
  /** False when another instance holds the claim: nothing was folded here. */
  readonly claimed: boolean;
  /** Execution events folded. */
  readonly events: number;
  readonly lag: IndexLag;
}

export class ExecutionsIndex {
  private readonly store: EventStore;
  private readonly tables: IndexTables;
  private readonly owner: string;
  private readonly batchSize: number;
  private readonly claimTtlMs: number;
  private readonly settleMs: number;
  private readonly pollMs: number;
  private readonly now: () => number;
  private claimedUntil = 0;
  private running: Promise<void> | undefined;
  private subscription: Subscription | undefined;
  private stopped = false;
  private wake: (() => void) | undefined;
  private woken = false;
  private folding: Promise<Omit<CatchUp, 'lag'>> | undefined;
  /**
   * The execution events the running index's subscription delivered after `heardAfter`, in order: every one of
   * them up to the subscription's position. A batch within them is folded from them, not read again from the store.
   */
  private heard: RecordedEvent[] = [];
  private heardAfter = Number.POSITIVE_INFINITY;
  /**
   * Where this instance's last commit left the checkpoint, and the folded states it wrote (the latest
   * `WRITTEN_LIMIT`). Both are the index's own as long as nobody else committed since; a batch folded on them
   * commits only from that checkpoint, so a commit by another instance makes it write nothing, and both are dropped.
   */
  private committedTo: number | undefined;
  private readonly written = new LRUCache<ExecutionId, FoldedExecution>({ max: WRITTEN_LIMIT });

  constructor(private readonly options: ExecutionsIndexOptions) {
    this.store = options.store;
    this.tables = options.tables;
    this.owner = options.owner;
    this.batchSize = options.batchSize ?? 1000;
    this.claimTtlMs = options.claimTtlMs ?? 30_000;
    this.settleMs = options.settleMs ?? 250;
    this.pollMs = options.pollMs ?? 5_000;
    this.now = options.now ?? Date.now;
  }

  /** Where the index is kept, as it may be printed. */
  get location(): string {
    return this.tables.location;
  }

  /** How far the index has folded, against the store's head now. */
  async lag(): Promise<IndexLag> {
    const [position, head] = await Promise.all([this.tables.position(), this.store.headPosition()]);
    return { position, head, behind: Math.max(0, head - position) };
  }

  /** Takes or renews the claim; true while this instance holds it. */
  async claim(): Promise<boolean> {
    const now = this.now();
    const until = now + this.claimTtlMs;
    const claim = await this.store.claim(INDEX_CLAIM, this.owner, new Date(until).toISOString(), new Date(now).toISOString());
    this.claimedUntil = claim.owner === this.owner ? until : 0;
    return claim.owner === this.owner;
  }

  /** Renews the claim once half of it has run out; false when it was lost. */
  private async holdClaim(): Promise<boolean> {
    if (this.claimedUntil - this.now() > this.claimTtlMs / 2) return true;
    return this.claim();
  }

  /**
   * Folds everything committed up to now, batch by batch, when this instance holds (or can take) the claim. Calls
   * while one runs share it.
   */
  async catchUp(): Promise<CatchUp> {
    const folded = await this.fold();
    return { ...folded, lag: await this.lag() };
  }

  /** The fold to the head that runs now, or a new one; the background loop needs no lag, so reads none. */
  private fold(): Promise<Omit<CatchUp, 'lag'>> {
    this.folding ??= this.foldToHead().finally(() => {
      this.folding = undefined;
    });
    return this.folding;
  }

  private async foldToHead(): Promise<Omit<CatchUp, 'lag'>> {
    let events = 0;
    if (!(await this.holdClaim())) return { claimed: false, events };
    let from = this.committedTo ?? (await this.tables.position());
    for (;;) {
      if (!(await this.holdClaim())) return { claimed: false, events };
      const page = this.heardPage(from) ?? (await this.store.readAll({ after: from, maxCount: this.batchSize, filter: EXECUTION_STREAMS }));
      if (page.lastPosition <= from) break;
      const { folded, rows } = foldBatch(page.events, await this.knownStates(page.events, from));
      if (!(await this.tables.commit({ from, to: page.lastPosition, folded, rows }))) {
        // Another instance moved the checkpoint (it took the claim after ours ran out): it folds from here on.
        this.claimedUntil = 0;
        this.forgetWritten();
        return { claimed: false, events };
      }
      this.remember(page.lastPosition, folded);
      events += page.events.length;
      from = page.lastPosition;
    }
    return { claimed: true, events };
  }

  /**
   * The folded states a batch after `from` folds onto: what this instance wrote when its last commit left the
   * checkpoint at `from`, the tables' for the rest, and for what the tables keep no state of (SQLite keeps none), the
   * execution folded again from its stream up to `from`. An execution whose first event is in the batch has none
   * (everything the index folded lies at or before `from`), so it is not asked for.
   */
  private async knownStates(events: readonly RecordedEvent[], from: number): Promise<Map<ExecutionId, FoldedExecution>> {
    const mine = this.committedTo === from ? this.written : undefined;
    const known = new Map<ExecutionId, FoldedExecution>();
    const ask: ExecutionId[] = [];
    const starts = new Set(events.filter((event) => event.revision === 0).map((event) => executionIdOfStream(event.streamId)));
    for (const id of executionIdsOf(events)) {
      const kept = mine?.get(id);
      if (kept !== undefined) known.set(id, kept);
      else if (!starts.has(id)) ask.push(id);
    }
    if (ask.length === 0) return known;
    const kept = await this.tables.foldedStates(ask);
    for (const [id, folded] of kept) known.set(id, folded);
    const refolded = await Promise.all(ask.filter((id) => !kept.has(id)).map(async (id) => [id, await this.foldedFromStream(id, from)] as const));
    for (const [id, folded] of refolded) if (folded !== undefined) known.set(id, folded);
    return known;
  }

  /** The execution as the index folded it: its stream's events up to `from`, folded again. */
  private async foldedFromStream(id: ExecutionId, from: number): Promise<FoldedExecution | undefined> {
    const events = await this.store.readStream(executionStream(id));
    return foldBatch(
      events.filter((event) => event.position <= from),
      new Map(),
    ).folded.get(id);
  }

  private remember(to: number, folded: ReadonlyMap<ExecutionId, FoldedExecution>): void {
    this.committedTo = to;
    for (const [id, state] of folded) this.written.set(id, state);
  }

  private forgetWritten(): void {
    this.committedTo = undefined;
    this.written.clear();
  }

  /**
   * The next batch after `from` from what the subscription delivered, when that holds every execution event after
   * `from`; `undefined` when the store must be read. A batch from them ends at the last event taken: what lies
   * beyond it (events of other streams, or ones not yet delivered) is read, so the checkpoint reaches the head.
   */
  private heardPage(from: number): ReadAllPage | undefined {
    if (this.subscription === undefined || from < this.heardAfter) return undefined;
    let folded = 0;
    while (folded < this.heard.length && this.heard[folded]!.position <= from) folded += 1;
    if (folded > 0) this.heard.splice(0, folded);
    this.heardAfter = from;
    if (this.heard.length === 0) return undefined;
    const events = this.heard.slice(0, this.batchSize);
    return { events, lastPosition: events.at(-1)!.position };
  }

  private forgetHeard(): void {
    this.heard = [];
    this.heardAfter = Number.POSITIVE_INFINITY;
  }

  private hear(event: RecordedEvent): void {
    if (this.heard.length >= HEARD_LIMIT) {
      // Nobody is folding them here (another instance holds the claim, or the index cannot write): let them go.
      this.heard = [];
      this.heardAfter = event.position;
      return;
    }
    this.heard.push(event);
  }

  /** Drops the index and folds the whole journal again (it must hold the claim). */
  async rebuild(): Promise<CatchUp> {
    await this.folding;
    if (!(await this.claim())) return { claimed: false, events: 0, lag: await this.lag() };
    this.forgetWritten();
    await this.tables.reset();
    return this.catchUp();
  }

  /** One page of executions, newest first, with how far behind the index is. */
  async page(query: ExecutionsQuery): Promise<ExecutionsPage> {
    const limit = limitOfQuery(query);
    const [rows, lag] = await Promise.all([this.tables.select(query, limit), this.lag()]);
    const executions = rows.slice(0, limit);
    const last = executions.at(-1);
    const nextCursor = rows.length > limit && last !== undefined ? encodeCursor({ acceptedMs: instantMs(last.acceptedAt), executionId: last.executionId }) : null;
    return { executions, nextCursor, index: lag };
  }

  /**
   * Keeps the index current in the background: its own subscription to the execution streams only wakes the fold,
   * which then reads a batch; nothing runs on the path of a tool call.
   */
  start(): void {
    if (this.running !== undefined) return;
    this.running = (async () => {
      // The subscription starts after a known position, so that what it delivers is known to be whole from there.
      const head = await this.store.headPosition().catch(() => undefined);
      if (this.stopped) return;
      // Without the head, from its end: it only wakes the fold, which then reads.
      this.heardAfter = head ?? Number.POSITIVE_INFINITY;
      this.subscription = this.store.subscribeToAll(
        (event) => {
          if (head !== undefined) this.hear(event);
          this.poke();
        },
        { from: head === undefined ? 'end' : { after: head }, filter: EXECUTION_STREAMS, unhurried: true },
      );
      this.subscription.done.catch((error: unknown) => {
        // A subscription that failed hears nothing more: batches are read from the store again.
        this.forgetHeard();
        this.options.onError?.(error);
      });
      await this.run();
    })();
  }

  private poke(): void {
    this.woken = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.fold();
      } catch (error) {
        this.forgetWritten();
        this.options.onError?.(error);
      }
      if (this.stopped) break;
      if (!this.woken) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.pollMs);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
        // Gather what commits right after the first event into the same batch.
        if (this.woken && !this.stopped) await new Promise((resolve) => setTimeout(resolve, this.settleMs));
      }
      this.woken = false;
    }
  }

  /** Stops the background fold and gives the claim up, so a standby instance takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.subscription?.stop().catch(() => undefined);
    // Nothing is heard any more: a later catch-up (a rebuild) reads the store.
    this.forgetHeard();
    await this.running;
    await this.folding?.catch(() => undefined);
    if (this.claimedUntil > 0) await this.store.releaseClaim(INDEX_CLAIM, this.owner).catch(() => undefined);
    this.claimedUntil = 0;
  }
}
