import { Logger } from '@nestjs/common';
import type { ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { DueQueue } from './due-queue';

/**
 * What the transport proved about a call's response: received (with the evidence), not delivered (the
 * transport closed before writing it, or the client gave up on it), or nothing either way — written, perhaps,
 * but never acknowledged (with why nothing could show it); the answer is then recorded as unproven, the execution
 * does not move, and a matching call gets the stored result.
 */
export type DeliverySettlement =
  | { readonly kind: 'delivered'; readonly evidence: string }
  | { readonly kind: 'not_delivered'; readonly reason: string }
  | { readonly kind: 'unproven'; readonly reason?: string };

export interface DeliveryWatch {
  readonly settled: Promise<DeliverySettlement>;
}

/** Where a tracker also shows its callers to other processes: the store's leases, under this front's instance. */
export interface SharedCallers {
  readonly store: EventStore;
  /** This front process's instance id: its callers' leases are named by it. */
  readonly instance: string;
  /** How long a caller's lease lasts: longer than a call waits; a front that dies leaves it to expire. */
  readonly leaseMs: number;
  readonly clock: Clock;
  /** How long the caller of a new execution waits before its lease is written (`CALLER_SHOWN_AFTER_MS`). */
  readonly showAfterMs?: number;
  /** By when such a caller still waiting is shown, counted from its execution's acceptance (`CALLER_SHOWN_WITHIN_MS`). */
  readonly shownWithinMs?: number;
}

/**
 * How long the caller of a new execution waits before it is shown to other processes. Most calls are answered
 * sooner, and their answer is what result delivery hears: they write no lease at all.
 */
export const CALLER_SHOWN_AFTER_MS = 1_000;

/**
 * By when, counted from its execution's acceptance, a caller still waiting is shown to other processes: the lease
 * written after `CALLER_SHOWN_AFTER_MS`, with time to spare for a busy server. Result delivery checks an outcome
 * nobody was answered with this long after it; a cancel that may have to count the execution's first caller waits
 * until then.
 */
export const CALLER_SHOWN_WITHIN_MS = 3_000;

/** A lease change waiting for the next statement, and the callers waiting for that statement. */
interface LeaseChange {
  readonly kind: 'renew' | 'release';
  readonly done: Promise<void>;
  readonly settle: () => void;
}

/**
 * Which executions have a caller waiting on an open transport. Result delivery uses it to tell "someone will
 * receive this outcome" from "the caller is gone" (docs/design.md section 5: the server can only know what it
 * wrote). In one process the front's registrations are all there is; when result delivery runs in other
 * processes (`oncegate serve`), the front also holds a lease per execution it has callers for
 * (`caller:<execution>/<front instance>`), dropped when its last caller leaves, and result delivery reads those.
 * A caller that attaches to an execution is shown before its `RetryAttached` commits (`visible`); the caller of a new
 * execution only once it has waited `CALLER_SHOWN_AFTER_MS` (`register(id, 'when_long')`): most calls are answered
 * before, and result delivery hears their answer instead, so they write nothing. The leases of all the calls that
 * start (or end) while a write is on its way go together in the next statement (`renewLeases` / `releaseLeases` where
 * the store has them): under load one write serves many calls.
 */
export class DeliveryTracker {
  private readonly live = new Map<string, number>();
  /** Per lease holder: the change the next statement makes (the last asked for wins: a drop after a write undoes it). */
  private pending = new Map<string, LeaseChange>();
  /** Per execution: its lease's latest change, queued or on its way, which `visible` waits for. */
  private readonly latest = new Map<string, Promise<void>>();
  private flushing: Promise<void> | undefined;
  /** Executions whose lease is written or queued: their last caller's leaving drops it. */
  private readonly shown = new Set<string>();
  /** Callers of new executions not shown yet, shown if they still wait when they fall due. */
  private readonly lateShows: DueQueue<undefined> | undefined;
  private readonly log = new Logger('callers');

  constructor(private readonly shared?: SharedCallers) {
    if (shared !== undefined) this.lateShows = new DueQueue(shared.showAfterMs ?? CALLER_SHOWN_AFTER_MS, shared.clock, (executionId) => this.show(executionId as ExecutionId));
  }

  /** Whether other processes learn of this tracker's callers (through the store's leases). */
  get sharesCallers(): boolean {
    return this.shared !== undefined;
  }

  /** By when a caller of a new execution that still waits is shown to other processes, from the execution's acceptance. */
  get shownWithinMs(): number {
    return this.shared?.shownWithinMs ?? CALLER_SHOWN_WITHIN_MS;
  }

  /**
   * Registers a caller waiting for the execution; the function returned withdraws it. `show`: `now` — shown to other
   * processes with the next statement (`visible` waits for it); `when_long` — only if it still waits after
   * `CALLER_SHOWN_AFTER_MS` (the caller of a new execution: result delivery hears the answer of most before then).
   */
  register(executionId: ExecutionId, show: 'now' | 'when_long' = 'now'): () => void {
    const count = this.live.get(executionId) ?? 0;
    this.live.set(executionId, count + 1);
    if (show === 'now') this.show(executionId);
    else if (count === 0) this.lateShows?.add(executionId, undefined);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.live.get(executionId) ?? 1) - 1;
      if (left > 0) {
        this.live.set(executionId, left);
        return;
      }
      this.live.delete(executionId);
      this.lateShows?.delete(executionId);
      if (this.shown.delete(executionId)) this.change(executionId, 'release');
    };
  }

  /** Stops showing callers that wait long; the leases already written expire. */
  stop(): void {
    this.lateShows?.stop();
  }

  private show(executionId: ExecutionId): void {
    if (this.shared === undefined || this.shown.has(executionId)) return;
    this.shown.add(executionId);
    this.change(executionId, 'renew');
  }

  /** Resolves once the execution's callers registered so far are visible to other processes. */
  async visible(executionId: ExecutionId): Promise<void> {
    await this.latest.get(executionId);
  }

  /** Whether a caller in this process waits for the execution. */
  hasCaller(executionId: string): boolean {
    return this.live.has(executionId);
  }

  /**
   * Whether a caller waits for the execution in this process or, when callers are shared, in any front process.
   * `firstCallerSince`: when the execution was accepted, if its first caller may be one to count: a caller shown
   * only when long (`when_long`) may not show until `shownWithinMs` after it, so the read waits until then.
   */
  async waiting(executionId: string, firstCallerSince?: number): Promise<boolean> {
    if (this.live.has(executionId)) return true;
    if (this.shared === undefined) return false;
    if (firstCallerSince !== undefined) {
      const wait = firstCallerSince + this.shownWithinMs - this.shared.clock.now().getTime();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      if (this.live.has(executionId)) return true;
    }
    const now = this.shared.clock.now().getTime();
    return (await this.shared.store.readLeases(`caller:${executionId}/`)).some((lease) => Date.parse(lease.expiresAt) > now);
  }

  /** Queues the lease change for the next statement, which starts at once unless one is on its way. */
  private change(executionId: ExecutionId, kind: LeaseChange['kind']): void {
    if (this.shared === undefined) return;
    const holder = `caller:${executionId}/${this.shared.instance}`;
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    // A change replaced before its statement ran resolves with the one that replaced it.
    const replaced = this.pending.get(holder);
    if (replaced !== undefined) void done.then(replaced.settle);
    this.pending.set(holder, { kind, done, settle });
    this.latest.set(executionId, done);
    void done.then(() => {
      if (this.latest.get(executionId) === done) this.latest.delete(executionId);
    });
    this.flushing ??= this.flush();
  }

  /** Writes the queued changes, a statement for the writes and one for the drops, until none is left. */
  private async flush(): Promise<void> {
    // Lets the calls that start in the same turn join this statement.
    await Promise.resolve();
    const { store, leaseMs, clock } = this.shared!;
    while (this.pending.size > 0) {
      const batch = this.pending;
      this.pending = new Map();
      const renew = [...batch].filter(([, change]) => change.kind === 'renew').map(([holder]) => holder);
      const release = [...batch].filter(([, change]) => change.kind === 'release').map(([holder]) => holder);
      try {
        if (renew.length > 0) {
          const expiresAt = new Date(clock.now().getTime() + leaseMs).toISOString();
          if (store.renewLeases !== undefined) await store.renewLeases(renew, expiresAt);
          else for (const holder of renew) await store.renewLease(holder, expiresAt);
        }
        if (release.length > 0) {
          if (store.releaseLeases !== undefined) await store.releaseLeases(release);
          else for (const holder of release) await store.releaseLease(holder);
        }
      } catch (error) {
        this.log.warn(`could not show ${batch.size} callers to result delivery: ${(error as Error).message}`);
      }
      for (const change of batch.values()) change.settle();
    }
    this.flushing = undefined;
  }
}
