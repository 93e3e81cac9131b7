import { Logger } from '@nestjs/common';
import type { ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';

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
}

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
 * (`caller:<execution>/<front instance>`), visible before the call's first event commits and dropped when its
 * last caller leaves, and result delivery reads those. The leases of all the calls that start (or end) while a write
 * is on its way go together in the next statement (`renewLeases` / `releaseLeases` where the store has them): under
 * load one write serves many calls, and a call waits for its own lease only just before its first event commits
 * (`visible`), so the write runs beside what the call does first.
 */
export class DeliveryTracker {
  private readonly live = new Map<string, number>();
  /** Per lease holder: the change the next statement makes (the last asked for wins: a drop after a write undoes it). */
  private pending = new Map<string, LeaseChange>();
  /** Per execution: its lease's latest change, queued or on its way, which `visible` waits for. */
  private readonly latest = new Map<string, Promise<void>>();
  private flushing: Promise<void> | undefined;
  private readonly log = new Logger('callers');

  constructor(private readonly shared?: SharedCallers) {}

  register(executionId: ExecutionId): () => void {
    const count = this.live.get(executionId) ?? 0;
    this.live.set(executionId, count + 1);
    if (count === 0) this.change(executionId, 'renew');
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
      this.change(executionId, 'release');
    };
  }

  /** Resolves once the execution's callers registered so far are visible to other processes. */
  async visible(executionId: ExecutionId): Promise<void> {
    await this.latest.get(executionId);
  }

  /** Whether a caller in this process waits for the execution. */
  hasCaller(executionId: string): boolean {
    return this.live.has(executionId);
  }

  /** Whether a caller waits for the execution in this process or, when callers are shared, in any front process. */
  async waiting(executionId: string): Promise<boolean> {
    if (this.live.has(executionId)) return true;
    if (this.shared === undefined) return false;
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
