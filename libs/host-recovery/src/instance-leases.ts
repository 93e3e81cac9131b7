import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Logger } from '@nestjs/common';
import type { AttemptOwner } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { InstanceLock, probeInstanceLock } from './instance-lock';

/**
 * An id for one dispatcher in one process: `dispatcher-<channel>@<host>/<front>/<pid>-<random>`. Unique per
 * process, so a second gateway or an `oncegate stdio` on the same data folder never takes another's attempts
 * for its own, and a restart is always a new instance.
 */
export function dispatcherInstanceId(channel: string, front: string, instance: string): string {
  return `dispatcher-${channel}@${hostname()}/${front}/${instance}`;
}

/** The part every dispatcher id of this process shares: `<pid>-<8 hex digits>`. */
export function newInstance(): string {
  return `${process.pid}-${randomBytes(4).toString('hex')}`;
}

/** The instance part of a dispatcher id (`undefined` for ids from before instances were unique). */
function instanceOf(dispatcherId: string): string | undefined {
  const instance = dispatcherId.slice(dispatcherId.lastIndexOf('/') + 1);
  return /^[0-9]+-[0-9a-f]{8}$/.test(instance) ? instance : undefined;
}

/**
 * This process's liveness in the store: a lease per dispatcher id, renewed every third of `ttlMs` while the
 * process runs and released when it stops, and the instance's lock on this machine (`InstanceLock`). Another
 * process reads both (`ownerOf`) to tell a live owner of an attempt from a gone one.
 */
export class InstanceLeases {
  private readonly log = new Logger('instance-leases');
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> = Promise.resolve();
  private lock: InstanceLock | undefined;

  constructor(
    private readonly store: EventStore,
    private readonly clock: Clock,
    readonly holders: readonly string[],
    private readonly ttlMs: number,
    /** Where the instance's lock file lives (`<data dir>/instances`), and the instance; none: lease only. */
    private readonly locking?: { readonly dir: string; readonly instance: string },
  ) {}

  /** Holds the lock and every lease before it resolves: start it before anything is dispatched. */
  async start(): Promise<void> {
    if (this.locking) this.lock = InstanceLock.hold(this.locking.dir, this.locking.instance);
    await this.renew();
    this.timer = setInterval(() => {
      this.renewing = this.renew().catch((error: unknown) => this.log.error(`renewing the liveness leases failed: ${(error as Error).message}`));
    }, Math.max(1, Math.floor(this.ttlMs / 3)));
    this.timer.unref();
  }

  /** Stops renewing and releases the leases and the lock: call it once nothing of this process is in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.renewing;
    for (const holder of this.holders) await this.store.releaseLease(holder);
    this.lock?.release();
    this.lock = undefined;
  }

  private async renew(): Promise<void> {
    const expiresAt = new Date(this.clock.now().getTime() + this.ttlMs).toISOString();
    for (const holder of this.holders) await this.store.renewLease(holder, expiresAt);
  }
}

/**
 * Whether the dispatcher that sent an attempt is alive at `now`: gone at once when its instance's lock on this
 * machine can be taken (`locksDir`); otherwise alive while its lease has not expired, gone when it expired, was
 * released, or was never held.
 */
export async function ownerOf(store: EventStore, dispatcherId: string, now: Date, locksDir?: string): Promise<AttemptOwner> {
  const instance = instanceOf(dispatcherId);
  if (locksDir !== undefined && instance !== undefined && probeInstanceLock(locksDir, instance) === 'gone') return 'gone';
  const lease = await store.readLease(dispatcherId);
  return lease !== undefined && Date.parse(lease.expiresAt) > now.getTime() ? 'alive' : 'gone';
}
