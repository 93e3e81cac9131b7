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

/**
 * Which executions have a caller waiting on an open transport. Result delivery uses it to tell "someone will
 * receive this outcome" from "the caller is gone" (docs/design.md section 5: the server can only know what it
 * wrote). In one process the front's registrations are all there is; when result delivery runs in other
 * processes (`oncegate serve`), the front also holds a lease per execution it has callers for
 * (`caller:<execution>/<front instance>`), written before the call's first event commits and dropped when its
 * last caller leaves, and result delivery reads those.
 */
export class DeliveryTracker {
  private readonly live = new Map<string, number>();
  /** Per execution: the last lease write, so a drop never overtakes the write it undoes. */
  private readonly writes = new Map<string, Promise<void>>();
  private readonly log = new Logger('callers');

  constructor(private readonly shared?: SharedCallers) {}

  register(executionId: ExecutionId): () => void {
    const count = this.live.get(executionId) ?? 0;
    this.live.set(executionId, count + 1);
    if (count === 0) this.write(executionId, (store, holder) => store.renewLease(holder, new Date(this.shared!.clock.now().getTime() + this.shared!.leaseMs).toISOString()));
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
      this.write(executionId, (store, holder) => store.releaseLease(holder));
    };
  }

  /** Resolves once the execution's callers registered so far are visible to other processes. */
  async visible(executionId: ExecutionId): Promise<void> {
    await this.writes.get(executionId);
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

  private write(executionId: ExecutionId, change: (store: EventStore, holder: string) => Promise<void>): void {
    if (this.shared === undefined) return;
    const { store, instance } = this.shared;
    const holder = `caller:${executionId}/${instance}`;
    const previous = this.writes.get(executionId) ?? Promise.resolve();
    const next: Promise<void> = previous
      .then(() => change(store, holder))
      .catch((error: unknown) => this.log.warn(`${executionId}: could not show its caller to result delivery: ${(error as Error).message}`))
      .finally(() => {
        if (this.writes.get(executionId) === next) this.writes.delete(executionId);
      });
    this.writes.set(executionId, next);
  }
}
