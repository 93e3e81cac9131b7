/** How many SDK sessions stay in memory, and for how long. */
export interface LiveSessionLimits {
  /** A session with no request for this long is let go (it stays restorable from the sessions journal). */
  readonly idleMs: number;
  /** Most sessions one agent keeps in memory; a new one lets go of that agent's least recently used idle one. */
  readonly perActor: number;
}

interface Entry<S> {
  readonly session: S;
  lastUsed: number;
  /** Requests of this session not yet answered (a standalone GET stream does not count). */
  busy: number;
}

/**
 * The sessions held in memory, each an SDK server and transport. A session is only a cache of what the sessions
 * journal holds: letting one go (idle, or over its agent's cap) closes its transport, and its next request
 * restores it from the journal. A session with a request in flight is never let go.
 */
export class LiveSessions<S extends { readonly id: string; readonly actor: string }> {
  private readonly entries = new Map<string, Entry<S>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly limits: LiveSessionLimits,
    private readonly now: () => number,
    /** Releases what the session holds (its transport); the journal is not touched. */
    private readonly release: (session: S) => Promise<void>,
  ) {}

  get(id: string): S | undefined {
    return this.entries.get(id)?.session;
  }

  set(session: S): void {
    this.entries.set(session.id, { session, lastUsed: this.now(), busy: 0 });
  }

  delete(id: string): boolean {
    return this.entries.delete(id);
  }

  values(): S[] {
    return [...this.entries.values()].map((entry) => entry.session);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Sessions in memory, of one agent or of all. */
  count(actor?: string): number {
    return [...this.entries.values()].filter((entry) => actor === undefined || entry.session.actor === actor).length;
  }

  /** Counts as activity without pinning the session (a standalone SSE stream opening). */
  touch(id: string): void {
    const entry = this.entries.get(id);
    if (entry !== undefined) entry.lastUsed = this.now();
  }

  /** Marks the session in use until the returned function is called (once the response is over). */
  use(id: string): () => void {
    const entry = this.entries.get(id);
    if (entry === undefined) return () => undefined;
    entry.busy += 1;
    entry.lastUsed = this.now();
    let done = false;
    return () => {
      if (done) return;
      done = true;
      entry.busy -= 1;
      entry.lastUsed = this.now();
    };
  }

  /**
   * Makes room for one more session of `actor`: at the cap, lets go of its least recently used idle session.
   * False when every session of the agent has a request in flight and none can go.
   */
  async makeRoom(actor: string): Promise<boolean> {
    const own = [...this.entries.values()].filter((entry) => entry.session.actor === actor);
    if (own.length < this.limits.perActor) return true;
    const idle = own.filter((entry) => entry.busy === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const entry of idle.slice(0, own.length - this.limits.perActor + 1)) await this.letGo(entry);
    return this.count(actor) < this.limits.perActor;
  }

  /** Lets go of every session idle for longer than the limit; returns how many went. */
  async expireIdle(): Promise<number> {
    const cutoff = this.now() - this.limits.idleMs;
    const expired = [...this.entries.values()].filter((entry) => entry.busy === 0 && entry.lastUsed <= cutoff);
    for (const entry of expired) await this.letGo(entry);
    return expired.length;
  }

  /** Checks for idle sessions at a quarter of the idle limit (at least every second, at most every minute). */
  start(): void {
    const every = Math.min(60_000, Math.max(1_000, Math.floor(this.limits.idleMs / 4)));
    this.timer = setInterval(() => void this.expireIdle().catch(() => undefined), every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }

  private async letGo(entry: Entry<S>): Promise<void> {
    if (this.entries.get(entry.session.id) !== entry) return;
    this.entries.delete(entry.session.id);
    await this.release(entry.session).catch(() => undefined);
  }
}
