import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import type { AttemptOwner } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';

/**
 * An id for one dispatcher in one process: `dispatcher-<channel>@<host>/<front>/<pid>-<random>`. Unique per
 * process, so a second gateway or an `oncegate stdio` on the same data folder never takes another's attempts
 * for its own, and a restart is always a new instance.
 */
export function dispatcherInstanceId(channel: string, front: string, instance: string): string {
  return `dispatcher-${channel}@${hostname()}/${front}/${instance}`;
}

/** The random part every dispatcher id of this process shares. */
export function newInstance(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

/**
 * The liveness leases of this process's dispatchers: renewed in the store every third of `ttlMs` while the
 * process runs, released when it stops. Another process reads them (`ownerOf`) to tell a live owner of an
 * attempt from a gone one.
 */
export class InstanceLeases {
  private readonly log = new Logger('instance-leases');
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    readonly holders: readonly string[],
    private readonly ttlMs: number,
  ) {}

  /** Holds every lease before it resolves: start it before anything is dispatched. */
  async start(): Promise<void> {
    await this.renew();
    this.timer = setInterval(() => {
      this.renewing = this.renew().catch((error: unknown) => this.log.error(`renewing the liveness leases failed: ${(error as Error).message}`));
    }, Math.max(1, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  /** Stops renewing and releases the leases: call it once nothing of this process is in flight any more. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.renewing;
    for (const holder of this.holders) await this.store.releaseLease(holder);
  }

  private async renew(): Promise<void> {
    const expiresAt = new Date(this.clock.now().getTime() + this.ttlMs).toISOString();
    for (const holder of this.holders) await this.store.renewLease(holder, expiresAt);
  }
}

/** Alive while its lease has not expired at `now`; gone when it expired, was released, or was never held. */
export async function ownerOf(store: EventStore, dispatcherId: string, now: Date): Promise<AttemptOwner> {
  const lease = await store.readLease(dispatcherId);
  return lease !== undefined && Date.parse(lease.expiresAt) > now.getTime() ? 'alive' : 'gone';
}
