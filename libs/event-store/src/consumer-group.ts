import { validateCount, validateFilter, validateStreamId } from './append-validation';
import { EventStoreClosedError } from './errors';
import type { Claim, EventFilter, EventHandler, EventStore, RecordedEvent, Subscription } from './event-store';

/**
 * Competing consumers on one store (docs/event-store.md, "Consumer groups"). The streams a group reads are split
 * into a fixed number of partitions by a hash of the stream id; each partition is an exclusive claim in the store
 * (`claim`), held by one member at a time and renewed while it lives, with its own checkpoint. Members announce
 * themselves with a liveness lease; each takes its fair share of the partitions (the members sorted by id, the
 * first ones one more when the count does not divide), releases what is above its share after handling the event
 * in hand, and takes partitions that are free or whose owner stopped renewing. So one execution's events are
 * handled by one member at a time, in order, and a member that dies is replaced once its claims expire.
 *
 * The partition count is the group's, not a member's: the first member of a new group fixes it in the store (a claim
 * that never expires, `layout`, its owner the count), and every member after, of any version that keeps it, reads it
 * there. A group formed before the count was kept (its partition claims or checkpoints in the store, no layout claim)
 * keeps the 16 it was formed with; a new one has 48, which 2, 3, 4, 6, 8, 12, 16 and 24 members share evenly.
 *
 * Every member reads the group's whole filtered feed once (one subscription, from the lowest checkpoint of the
 * partitions it holds) and hands on the events of its partitions; taking over a partition further back restarts
 * that read from there. Delivery is at least once: what a member handled after its partition's last checkpoint
 * is handled again by the next owner, so handlers decide from the stream's state, as every service does.
 */
export interface ConsumerGroupOptions {
  /** The group's name: the service's durable consumer name. */
  readonly group: string;
  /** This member's id, unique per process. */
  readonly member: string;
  readonly filter?: EventFilter;
  /**
   * Partitions of the group when this member forms it (the first member of a group decides, and the store keeps it);
   * a group formed already keeps its own count, whatever is given here (a different one is logged as a warning).
   * Default: 48 for a new group, 16 for a group formed before the count was kept in the store.
   */
  readonly partitions?: number;
  /**
   * How long a claim or membership lasts unless renewed (renewed every third of it): how long the partitions of a
   * member that died stay unhandled. Default: 15 000 ms.
   */
  readonly leaseMs?: number;
  /** How often, at most, a partition's checkpoint is written while it is held. Default: 1000 ms. */
  readonly checkpointEveryMs?: number;
  /**
   * Events handed on and not yet handled, at most, over all partitions: the partitions' events are handled
   * concurrently (each partition's in order); past this the reader waits. Default: 64.
   */
  readonly concurrency?: number;
  /**
   * Called before the first event of a partition this member just took is handed on (load what it needs), with the
   * group's partition count (`partitionOf` of a stream with it tells whether the stream is in that partition).
   */
  readonly onAssigned?: (partition: number, partitions: number) => Promise<void>;
  /** Told about claims taken and released (`debug`), and claims lost and renewals that failed (`warn`). */
  readonly log?: (message: string, level: 'debug' | 'warn') => void;
  readonly now?: () => Date;
}

/** A member's subscription: the port's subscription, and which partitions it holds now. */
export interface GroupSubscription extends Subscription {
  /** Whether this member holds the partition of the stream now. */
  owns(streamId: string): boolean;
  /** The partitions this member holds now, in order. */
  readonly partitions: readonly number[];
}

/** A new group's partitions: shared evenly by 2, 3, 4, 6, 8, 12, 16 and 24 members. */
export const DEFAULT_PARTITIONS = 48;
/** The partitions of a group formed before the count was kept in the store (every member then used 16). */
export const FORMER_PARTITIONS = 16;
const DEFAULT_LEASE_MS = 15_000;
/** A layout claim never expires: the group's partition count is fixed for its life. */
const LAYOUT_HELD_UNTIL = '9999-12-31T23:59:59.999Z';

/** The partition of a stream: FNV-1a (32 bits) of its id, modulo the partition count. Every member computes the same. */
export function partitionOf(streamId: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < streamId.length; i += 1) {
    hash ^= streamId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}

/** The names a group keeps in the store: member leases, partition claims, partition checkpoints. */
export function groupNames(group: string) {
  return {
    memberPrefix: `group:${group}:member:`,
    member: (id: string) => `group:${group}:member:${id}`,
    claimPrefix: `group:${group}:partition:`,
    claim: (partition: number) => `group:${group}:partition:${String(partition).padStart(3, '0')}`,
    checkpoint: (partition: number) => `${group}#${String(partition).padStart(3, '0')}`,
    /** The claim whose owner is the group's partition count, taken once by the member that formed the group. */
    layout: `group:${group}:layout`,
  };
}

interface Held {
  /** Every event of the partition at or below it has been handled. */
  checkpoint: number;
  /** The checkpoint as last written. */
  written: number;
  /** Until when the claim is held, as last renewed. */
  until: number;
  /** The running reader hands on every event of the partition after its checkpoint (it was at or below it). */
  covered: boolean;
  /** Events handed on and not handled yet, in order; the partition's runner works through them. */
  readonly queue: RecordedEvent[];
  /** Position of the last event queued: a reader started again further back does not queue it twice. */
  queued: number;
  /** The partition's runner, while it has events. */
  running: Promise<void> | undefined;
  /** Queued events were dropped (the partition lost or handed over): its checkpoint stays at the last handled. */
  dropped: boolean;
}

/** Joins the group as `member` and hands the events of the partitions it holds to `handler`, one at a time. */
export function subscribeAsGroupMember(store: EventStore, handler: EventHandler, options: ConsumerGroupOptions): GroupSubscription {
  return new GroupMember(store, handler, options).start();
}

class GroupMember {
  /** The group's partition count, once the first round has read or fixed it (nothing is held before). */
  private partitionCount = 0;
  private readonly leaseMs: number;
  private readonly checkpointEveryMs: number;
  private readonly names: ReturnType<typeof groupNames>;
  private readonly now: () => Date;
  private readonly held = new Map<number, Held>();
  private reader: Subscription | undefined;
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private readonly concurrency: number;
  /** Events queued over all partitions, and the reader waiting for room. */
  private pending = 0;
  private readonly room: Array<() => void> = [];
  private stopping = false;
  private lastFlush = Date.now();
  private settle!: { resolve: () => void; reject: (error: unknown) => void };
  private readonly done: Promise<void>;
  private markCaughtUp!: () => void;
  private readonly caughtUp = new Promise<void>((resolve) => (this.markCaughtUp = resolve));

  constructor(
    private readonly store: EventStore,
    private readonly handler: EventHandler,
    private readonly options: ConsumerGroupOptions,
  ) {
    validateStreamId(options.group, 'group');
    validateStreamId(options.member, 'member');
    validateFilter(options.filter);
    if (options.partitions !== undefined) validateCount(options.partitions, 'partitions');
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    validateCount(this.leaseMs, 'leaseMs');
    this.checkpointEveryMs = options.checkpointEveryMs ?? 1000;
    this.concurrency = options.concurrency ?? 64;
    validateCount(this.concurrency, 'concurrency');
    this.names = groupNames(options.group);
    this.now = options.now ?? (() => new Date());
    this.done = new Promise<void>((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => undefined);
  }

  start(): GroupSubscription {
    // The first round takes this member's share before `caughtUp` can resolve; later rounds run on a timer.
    this.ticking = this.round().then(
      async () => {
        if (this.reader === undefined) this.markCaughtUp();
        else await this.reader.caughtUp.then(() => this.markCaughtUp());
      },
      (error: unknown) => this.fail(error),
    );
    this.timer = setInterval(() => this.tick(), Math.max(50, Math.floor(this.leaseMs / 3)));
    this.timer.unref?.();
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const member = this;
    return {
      caughtUp: this.caughtUp,
      done: this.done,
      get position() {
        return member.reader?.position ?? 0;
      },
      owns: (streamId) => this.held.size > 0 && this.held.has(partitionOf(streamId, this.partitionCount)),
      get partitions() {
        return [...member.held.keys()].sort((a, b) => a - b);
      },
      stop: () => this.stop(),
    };
  }

  private log(message: string, level: 'debug' | 'warn' = 'debug'): void {
    this.options.log?.(`${this.options.member}: ${message}`, level);
  }

  private tick(): void {
    if (this.stopping) return;
    this.ticking = this.ticking.then(() => this.round()).catch((error: unknown) => {
      // The store may be away for a while: claims not renewed simply expire, and the next round tries again.
      this.log(`could not renew its membership or claims: ${(error as Error).message}`, 'warn');
    });
  }

  /** Writes the checkpoints that are due, in turn with the rounds (never two writers of one checkpoint at once). */
  private flushSoon(): void {
    if (this.stopping) return;
    this.ticking = this.ticking.then(() => this.flush(false)).catch((error: unknown) => {
      this.log(`could not write its checkpoints: ${(error as Error).message}`, 'warn');
    });
  }

  /**
   * The group's partition count: the layout claim's owner. A member that finds none claims it for the count it would
   * form the group with — the one it was given, else 16 when the group's partitions were claimed or checkpointed
   * before the count was kept, else 48 — and follows whatever the claim then says: of members racing to form a
   * group, the one whose claim lands first decides for all.
   */
  private async settlePartitions(now: Date): Promise<void> {
    if (this.partitionCount > 0) return;
    const { layout } = this.names;
    const kept = (await this.store.readClaims(layout)).find((claim) => claim.name === layout);
    const proposed = kept !== undefined ? undefined : (this.options.partitions ?? ((await this.formedBefore()) ? FORMER_PARTITIONS : DEFAULT_PARTITIONS));
    const claim = kept ?? (await this.store.claim(layout, String(proposed), LAYOUT_HELD_UNTIL, now.toISOString()));
    const count = Number(claim.owner);
    if (!Number.isSafeInteger(count) || count < 1) throw new Error(`the group ${this.options.group} keeps "${claim.owner}" as its partition count (claim ${layout}), which is not a count`);
    if (this.options.partitions !== undefined && this.options.partitions !== count) {
      this.log(`was given ${this.options.partitions} partitions, but the group ${this.options.group} was formed with ${count}: it uses ${count}`, 'warn');
    }
    this.partitionCount = count;
  }

  /**
   * Whether members that did not keep the count ran this group: its partition claims or checkpoints are in the store
   * (a member writes every partition's checkpoint it holds once its read moves on, so partition 0's stands for all).
   * The service's single checkpoint of the embedded gateway is no such trace: each partition of a new group starts
   * from it, whatever their count.
   */
  private async formedBefore(): Promise<boolean> {
    if ((await this.store.readClaims(this.names.claimPrefix)).length > 0) return true;
    return (await this.store.readCheckpoint(this.names.checkpoint(0))) !== undefined;
  }

  /** One round: renew the membership and the claims, release what is above the share, take what is missing. */
  private async round(): Promise<void> {
    if (this.stopping) return;
    const now = this.now();
    await this.settlePartitions(now);
    const until = new Date(now.getTime() + this.leaseMs);
    await this.store.renewLease(this.names.member(this.options.member), until.toISOString());
    const members = (await this.store.readLeases(this.names.memberPrefix))
      .filter((lease) => Date.parse(lease.expiresAt) > now.getTime())
      .map((lease) => lease.holder.slice(this.names.memberPrefix.length));
    if (!members.includes(this.options.member)) members.push(this.options.member);
    members.sort();
    const index = members.indexOf(this.options.member);
    const share = Math.floor(this.partitionCount / members.length) + (index < this.partitionCount % members.length ? 1 : 0);

    if (this.stopping) return;
    const renewing = [...this.held];
    const renewed = await this.claimEach(
      renewing.map(([partition]) => this.names.claim(partition)),
      until,
      now,
    );
    renewing.forEach(([partition, held], index) => {
      // Let lapse meanwhile (see `stillHeld`): taken again, if at all, by the part of the round that takes.
      if (this.held.get(partition) !== held) return;
      const claim = renewed[index]!;
      if (claim.owner === this.options.member) held.until = until.getTime();
      else {
        this.held.delete(partition);
        this.log(`lost partition ${partition} of ${this.options.group} to ${claim.owner}`, 'warn');
      }
    });
    const extra = [...this.held.keys()].sort((a, b) => b - a).slice(0, Math.max(0, this.held.size - share));
    for (const partition of extra) await this.release(partition);

    if (this.held.size < share) {
      const claims = new Map((await this.store.readClaims(this.names.claimPrefix)).map((claim) => [claim.name, claim]));
      // Start at a different place per member, so members joining together do not all race for the same ones.
      const offset = Math.floor((index * this.partitionCount) / members.length);
      for (let i = 0; i < this.partitionCount && this.held.size < share && !this.stopping; i += 1) {
        const partition = (offset + i) % this.partitionCount;
        if (this.held.has(partition)) continue;
        const claim = claims.get(this.names.claim(partition));
        if (claim !== undefined && claim.owner !== this.options.member && Date.parse(claim.expiresAt) > now.getTime()) continue;
        const taken = await this.store.claim(this.names.claim(partition), this.options.member, until.toISOString(), now.toISOString());
        if (taken.owner !== this.options.member) continue;
        await this.take(partition, until.getTime());
      }
    }
    await this.flush(false);
    await this.read();
  }

  /** Takes or renews the claims `names` for this member: in one statement where the store can (`claimAll`). */
  private async claimEach(names: readonly string[], until: Date, now: Date): Promise<Claim[]> {
    if (names.length === 0) return [];
    if (this.store.claimAll !== undefined) return this.store.claimAll(names, this.options.member, until.toISOString(), now.toISOString());
    const claims: Claim[] = [];
    for (const name of names) claims.push(await this.store.claim(name, this.options.member, until.toISOString(), now.toISOString()));
    return claims;
  }

  /** Starts handling a partition just claimed: from its checkpoint (or the group's single one, from before groups). */
  private async take(partition: number, until: number): Promise<void> {
    const checkpoint = (await this.store.readCheckpoint(this.names.checkpoint(partition))) ?? (await this.store.readCheckpoint(this.options.group)) ?? 0;
    await this.options.onAssigned?.(partition, this.partitionCount);
    // The reader skipped this partition's events up to where it is: behind that, it must read again.
    const covered = this.reader !== undefined && checkpoint >= this.reader.position;
    this.held.set(partition, { checkpoint, written: checkpoint, until, covered, queue: [], queued: checkpoint, running: undefined, dropped: false });
    this.log(`took partition ${partition} of ${this.options.group} at position ${checkpoint}`);
  }

  /** Hands a partition over: after the event in hand (what is queued behind it is left to the next owner), with its checkpoint written. */
  private async release(partition: number): Promise<void> {
    const held = this.held.get(partition);
    if (held === undefined) return;
    this.held.delete(partition);
    await held.running;
    this.drop(held);
    this.advance(held);
    if (held.checkpoint > held.written) await this.store.storeCheckpoint(this.names.checkpoint(partition), held.checkpoint);
    await this.store.releaseClaim(this.names.claim(partition), this.options.member);
    this.log(`released partition ${partition} of ${this.options.group} at position ${held.checkpoint}`);
  }

  /**
   * A held partition is caught up to wherever the reader is when the reader covers it and nothing of it waits: every
   * event of it up to the reader's position has been handled.
   */
  private advance(held: Held): void {
    if (this.reader === undefined || !held.covered || held.dropped || held.queue.length > 0 || held.running !== undefined) return;
    if (this.reader.position > held.checkpoint) held.checkpoint = this.reader.position;
  }

  private async flush(force: boolean): Promise<void> {
    if (!force && Date.now() - this.lastFlush < this.checkpointEveryMs) return;
    this.lastFlush = Date.now();
    const due: Array<{ partition: number; held: Held; checkpoint: number }> = [];
    for (const [partition, held] of [...this.held]) {
      this.advance(held);
      if (held.checkpoint > held.written) due.push({ partition, held, checkpoint: held.checkpoint });
    }
    if (due.length === 0) return;
    if (this.store.storeCheckpoints !== undefined) {
      // Every partition's checkpoint in one statement, not one per partition.
      await this.store.storeCheckpoints(due.map(({ partition, checkpoint }) => ({ consumer: this.names.checkpoint(partition), position: checkpoint })));
      for (const { held, checkpoint } of due) held.written = Math.max(held.written, checkpoint);
      return;
    }
    for (const { partition, held, checkpoint } of due) {
      await this.store.storeCheckpoint(this.names.checkpoint(partition), checkpoint);
      held.written = Math.max(held.written, checkpoint);
    }
  }

  /** (Re)starts the reader when a held partition lies behind where it started; stops it when nothing is held. */
  private async read(): Promise<void> {
    if (this.stopping) return;
    if (this.held.size === 0) {
      await this.stopReader();
      return;
    }
    if (this.reader !== undefined && [...this.held.values()].every((held) => held.covered)) return;
    await this.stopReader();
    const from = Math.min(...[...this.held.values()].map((held) => held.checkpoint));
    for (const held of this.held.values()) held.covered = true;
    const reader = this.store.subscribeToAll((event) => this.deliver(event), { from: { after: from }, filter: this.options.filter });
    this.reader = reader;
    reader.done.then(
      () => undefined,
      (error: unknown) => {
        if (this.reader === reader && !(error instanceof EventStoreClosedError && this.stopping)) this.fail(error);
      },
    );
  }

  private async stopReader(): Promise<void> {
    const reader = this.reader;
    if (reader === undefined) return;
    // Partitions it covered keep where it got to.
    for (const held of this.held.values()) this.advance(held);
    this.reader = undefined;
    await reader.stop();
  }

  /**
   * Queues the event on its partition (when held, covered by the read, and not handled yet); waits while too much is
   * queued. A partition taken behind where the read is waits for the read started again from its checkpoint: an event
   * of it the running read hands on meanwhile is left for that read, or it would be queued ahead of the partition's
   * earlier events, which the new read would then take for queued already and skip.
   */
  private async deliver(event: RecordedEvent): Promise<void> {
    const partition = partitionOf(event.streamId, this.partitionCount);
    const held = this.held.get(partition);
    if (held === undefined || !held.covered || event.position <= Math.max(held.checkpoint, held.queued)) return;
    held.queue.push(event);
    held.queued = event.position;
    this.pending += 1;
    held.running ??= this.run(partition, held);
    while (this.pending >= this.concurrency && !this.stopping) await new Promise<void>((resolve) => this.room.push(resolve));
  }

  /** Handles a partition's queued events in order, while the partition is held. */
  private async run(partition: number, held: Held): Promise<void> {
    // The caller stores this promise before the loop can end and clear it.
    await Promise.resolve();
    try {
      while (held.queue.length > 0) {
        if (!(await this.stillHeld(partition, held))) {
          this.drop(held);
          return;
        }
        const event = held.queue[0]!;
        await this.handler(event);
        held.queue.shift();
        this.freed(1);
        held.checkpoint = Math.max(held.checkpoint, event.position);
        if (Date.now() - this.lastFlush >= this.checkpointEveryMs) this.flushSoon();
      }
    } catch (error) {
      this.drop(held);
      this.fail(error);
    } finally {
      held.running = undefined;
    }
  }

  /**
   * Whether the partition may be acted on now. A claim about to lapse (the store unreachable for renewals) is not:
   * it is renewed, or lost to the member that takes it over and handles its events from the checkpoint.
   */
  private async stillHeld(partition: number, held: Held): Promise<boolean> {
    for (;;) {
      if (this.held.get(partition) !== held || this.stopping) return false;
      const left = held.until - this.now().getTime();
      if (left >= this.leaseMs / 3) return true;
      if (left <= 0) {
        // Lapsed: another member may hold it now. It is taken again (from its checkpoint) if still free.
        this.held.delete(partition);
        this.log(`let partition ${partition} of ${this.options.group} lapse: its claim could not be renewed`, 'warn');
        return false;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Forgets what is queued on a partition no longer handled here. */
  private drop(held: Held): void {
    if (held.queue.length === 0) return;
    held.dropped = true;
    this.freed(held.queue.length);
    held.queue.length = 0;
  }

  private freed(count: number): void {
    this.pending -= count;
    for (const resolve of this.room.splice(0)) resolve();
  }

  private fail(error: unknown): void {
    this.settle.reject(error);
    void this.stop();
  }

  private async stop(): Promise<void> {
    if (this.stopping) return this.done.catch(() => undefined);
    this.stopping = true;
    clearInterval(this.timer);
    await this.ticking.catch(() => undefined);
    await this.stopReader().catch(() => undefined);
    // The events in hand finish; what is queued behind them is left to the next owner.
    await Promise.all([...this.held.values()].map((held) => held.running));
    this.markCaughtUp();
    try {
      await this.flush(true);
      for (const partition of [...this.held.keys()]) {
        await this.store.releaseClaim(this.names.claim(partition), this.options.member);
        this.held.delete(partition);
      }
      await this.store.releaseLease(this.names.member(this.options.member));
    } catch {
      // A store that went away keeps the claims until they expire: the next owner waits that long, nothing more.
    }
    this.settle.resolve();
  }
}
