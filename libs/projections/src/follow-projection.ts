/**
 * `projection run <name> --into <target> [--follow]`: a projection's rows kept in a SQL table analysts query. The run
 * folds from the table's checkpoint, and after each batch of events (at most `batchEvents`, and at most `batchMs`
 * after its first event) brings the table to the projection's rows and checkpoints state and position in the same
 * transaction (sql-target.ts). With `follow`, it then keeps the table current from the store's live subscription
 * until it is told to stop (its signal), checkpoints, and returns where it stopped.
 *
 * One run at a time writes a table: a run with the store claims `projection:<table>` there (the store's `claim`),
 * renews it while it runs, and stops writing when the claim is lost. Each batch also checks, inside its transaction,
 * that the checkpoint is still the one this run last wrote, so even a run that lost its claim without noticing (or
 * a run over a journal export, which has no store to claim in) can never write over another's batch.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { pause, type Claim, type EventStore, type RecordedEvent, type Subscription } from '@oncegate/event-store';
import { eventsFromStore, type ProjectionSource } from './event-sources';
import { jsonProblem, matchesFilter, type Projection, type ProjectionParams } from './projection';
import { ProjectionCheckpointError, ProjectionStateError, projectionParams } from './run-projection';
import { EMPTY_TABLE, planTableWrite, writtenTable, type WrittenTable } from './sql-table-plan';
import { CHECKPOINT_TABLE, parseSqlTarget, ProjectionTableConflictError, ProjectionTargetError, SqlTarget, type SqlCheckpoint } from './sql-target';

export const DEFAULT_BATCH_EVENTS = 10_000;
export const DEFAULT_BATCH_MS = 500;
export const DEFAULT_CLAIM_MS = 15_000;

export interface ProjectIntoOptions<State> {
  readonly projection: Projection<State>;
  /** `sqlite:<file>`, a file ending .db or .sqlite, or `postgres://…` (`parseSqlTarget`). */
  readonly into: string;
  /** The table's name. Default: the projection's name with `_` for `-` (`runs-by-actor` → `runs_by_actor`). */
  readonly table?: string;
  readonly params?: Readonly<Record<string, string>>;
  /** Where a run without `follow` reads (the store or a journal export). Default: the store. */
  readonly source?: ProjectionSource;
  /**
   * The event store: read live with `follow`, and where the run claims its table. Without it (a journal export),
   * nothing is claimed; `follow` needs it.
   */
  readonly store?: EventStore;
  /** Keep the table current after reaching the head, until `signal` aborts. Default false: one catch-up. */
  readonly follow?: boolean;
  /** Drop the table and its checkpoint and fold from `from` (default 0). */
  readonly rebuild?: boolean;
  /** Fold only events after this position (with no checkpoint, or with `rebuild`). */
  readonly from?: number;
  /** A batch is written after this many events, at most. Default 10 000. */
  readonly batchEvents?: number;
  /** A batch is written this long after its first event, at most (ms). Default 500. */
  readonly batchMs?: number;
  /** How long the claim holds unless renewed (renewed every third of it). Default 15 000 ms. */
  readonly claimMs?: number;
  /** When another run holds the table's claim: wait for it instead of failing. */
  readonly wait?: boolean;
  /** Who this run is, in the claim. Default: `projection run on <host> pid <pid> <random>`. */
  readonly owner?: string;
  /** Aborting stops the run: it writes what it folded, checkpoints, and returns. */
  readonly signal?: AbortSignal;
  /** While catching up: how far the run has come since it started, and the distance to the head. */
  readonly onProgress?: (done: number, total?: number) => void;
  /** With `follow`: the run has reached the head and written it; the table is current from here on. */
  readonly onCaughtUp?: (position: number) => void;
  /** After each batch written. */
  readonly onBatch?: (batch: ProjectionBatch) => void;
  /** When `wait` is set and another run holds the claim: told once, with that claim. */
  readonly onWaiting?: (claim: Claim) => void;
}

export interface ProjectionBatch {
  readonly position: number;
  readonly events: number;
  readonly rows: number;
  /** Rows inserted or updated (without a key: every row, when any changed). */
  readonly upserted: number;
  readonly deleted: number;
}

export interface ProjectIntoResult {
  readonly table: string;
  /** The target as it may be shown (no password). */
  readonly target: string;
  /** Global position of the last event folded and checkpointed. */
  readonly position: number;
  /** Events folded since the projection started from its beginning. */
  readonly events: number;
  readonly rows: number;
  /** The checkpoint position this run resumed after, if it resumed. */
  readonly resumedFrom: number | undefined;
  readonly batches: number;
  /** `head`: a run without follow reached the head; `signal`: it was told to stop. */
  readonly stopped: 'head' | 'signal';
}

/** Another run holds the table's claim: names it and until when. */
export class ProjectionClaimedError extends Error {
  readonly kind = 'projection_claimed' as const;
  constructor(readonly claim: Claim) {
    super(
      `${claim.name} is held by ${claim.owner} until ${claim.expiresAt}: another run writes that table; stop it, wait for its claim to lapse, or pass --wait`,
    );
    this.name = 'ProjectionClaimedError';
  }
}

/** This run lost its claim (another took it, or it could not renew it in time): it stopped writing. */
export class ProjectionClaimLostError extends Error {
  readonly kind = 'projection_claim_lost' as const;
  constructor(
    readonly claimName: string,
    reason: string,
  ) {
    super(`${claimName}: ${reason}; this run stopped writing`);
    this.name = 'ProjectionClaimLostError';
  }
}

/** A projection's default table name: its name with `_` for `-`. */
export function defaultTableName(projectionName: string): string {
  return projectionName.replaceAll('-', '_');
}

/** The claim a run into `table` takes in the store. */
export function projectionClaimName(table: string): string {
  return `projection:${table}`;
}

export async function projectInto<State>(options: ProjectIntoOptions<State>): Promise<ProjectIntoResult> {
  const { projection, store, signal } = options;
  const batchEvents = options.batchEvents ?? DEFAULT_BATCH_EVENTS;
  const batchMs = options.batchMs ?? DEFAULT_BATCH_MS;
  const claimMs = options.claimMs ?? DEFAULT_CLAIM_MS;
  for (const [name, value] of [['batchEvents', batchEvents], ['batchMs', batchMs], ['claimMs', claimMs]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a whole number of at least 1, got ${value}`);
  }
  if (options.from !== undefined && (!Number.isSafeInteger(options.from) || options.from < 0)) {
    throw new RangeError(`from must be a global position (a whole number of at least 0), got ${options.from}`);
  }
  if (options.follow === true && store === undefined) throw new ProjectionTargetError(options.into, 'following needs the event store (a journal export does not grow)');
  const source = options.source;
  if (options.follow !== true && source === undefined && store === undefined) throw new TypeError('projectInto needs a source or a store');

  const params = projectionParams(projection as Projection<unknown>, options.params);
  const table = options.table ?? defaultTableName(projection.name);
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(table) || table.toLowerCase() === CHECKPOINT_TABLE) {
    throw new ProjectionTargetError(
      options.into,
      `${JSON.stringify(table)} cannot be a table name: use letters, digits and _ (at most 63, not starting with a digit), and not ${CHECKPOINT_TABLE}`,
    );
  }
  const spec = parseSqlTarget(options.into);
  const key = projection.key === undefined ? undefined : [...projection.key];

  const claim = store === undefined ? undefined : await TableClaim.take(store, projectionClaimName(table), options.owner ?? defaultOwner(), claimMs, options.wait === true, signal, options.onWaiting);
  let target: SqlTarget | undefined;
  try {
    target = await SqlTarget.open(spec);
    const where = `${target.description} table ${table}`;
    const { checkpoint, tableExists } = await target.read(table);
    const resumed = options.rebuild === true ? undefined : checkpoint;
    checkOwnTable(target.description, table, projection.name, checkpoint, tableExists);
    if (resumed !== undefined) checkResume(where, resumed, params, key, options.from, tableExists);

    let state: State = resumed === undefined ? projection.initialState(params) : (JSON.parse(resumed.state) as State);
    let written: WrittenTable = resumed === undefined ? EMPTY_TABLE : writtenTable(projection.rows(state, params), resumed.columns, resumed.key, table);
    const start = resumed?.position ?? options.from ?? 0;
    let position = start;
    let events = resumed?.events ?? 0;
    let generation = checkpoint?.generation ?? 0;
    let dropFirst = options.rebuild === true && (tableExists || checkpoint !== undefined);
    let checkpointed = resumed === undefined ? -1 : resumed.position;
    let pending = 0;
    let batches = 0;
    let rowCount = written.key === undefined ? (resumed === undefined ? 0 : projection.rows(state, params).length) : written.rows.size;

    /**
     * Writes the rows and the checkpoint after the last event folded, or after `examined` when the run has read that
     * far (past events the filter skipped); nothing when nothing moved.
     */
    const writeBatch = async (examined?: number): Promise<void> => {
      // Events folded since the batch was asked for are in the state: the checkpoint is never behind them.
      const at = Math.max(examined ?? position, position);
      if (pending === 0 && at === checkpointed && !dropFirst) return;
      const problem = jsonProblem(state);
      if (problem !== undefined) throw new ProjectionStateError(projection.name, at, problem);
      // Taken before the first await: events folded while this batch is written belong to the next one.
      const stateText = JSON.stringify(state);
      const rows = projection.rows(state, params);
      const eventsThen = events;
      pending = 0;
      const plan = planTableWrite(table, rows, dropFirst ? EMPTY_TABLE : written, key);
      await claim?.ensure();
      generation = await target!.commit({
        table,
        expectedGeneration: generation,
        dropFirst,
        plan,
        checkpoint: { projection: projection.name, params: sorted(params), position: at, events: eventsThen, state: stateText, writtenAt: new Date().toISOString() },
      });
      dropFirst = false;
      written = plan.next;
      checkpointed = at;
      rowCount = rows.length;
      batches += 1;
      options.onBatch?.({ position: at, events: eventsThen, rows: rows.length, upserted: plan.replace?.length ?? plan.upserts.length, deleted: plan.deletes.length });
    };
    // Batches are written one after another, in the order they were asked for.
    let writing: Promise<void> = Promise.resolve();
    const flush = (examined?: number): Promise<void> => (writing = writing.then(() => writeBatch(examined)));

    const fold = (event: RecordedEvent) => {
      state = projection.evolve(state, event, params);
      position = event.position;
      events += 1;
      pending += 1;
    };

    // Read before the events: every event at or below it is read by the time the run reaches the head.
    const head = options.follow === true && options.onProgress === undefined ? undefined : await (source === undefined ? store!.headPosition() : source.head());
    const total = head === undefined ? undefined : Math.max(0, head - start);
    const filter = projection.filter;
    let stopped: 'head' | 'signal' = 'head';

    if (options.follow !== true) {
      let batchStarted = Date.now();
      const events$ = (source?.events.bind(source) ?? ((read) => eventsFromStore(store!, read)))({ after: start, ...(filter === undefined ? {} : { filter }) });
      for await (const event of events$) {
        if (signal?.aborted === true) {
          stopped = 'signal';
          break;
        }
        if (!matchesFilter(filter, event)) continue;
        if (pending === 0) batchStarted = Date.now();
        fold(event);
        options.onProgress?.(position - start, total);
        if (pending >= batchEvents || Date.now() - batchStarted >= batchMs) await flush();
      }
      // The events after the last one the filter let through were read too: the checkpoint is after them.
      await flush(stopped === 'head' && head !== undefined ? Math.max(position, head) : position);
      options.onProgress?.(total ?? position - start, total);
    } else {
      stopped = 'signal';
      let failure: { error: unknown } | undefined;
      let wake!: () => void;
      const ended = new Promise<void>((resolve) => (wake = resolve));
      const fail = (error: unknown) => {
        failure ??= { error };
        wake();
      };
      signal?.addEventListener('abort', () => wake(), { once: true });
      if (signal?.aborted === true) wake();
      claim?.onLost(fail);
      let timer: NodeJS.Timeout | undefined;
      let live = false;
      const subscription: Subscription = store!.subscribeToAll(
        async (event) => {
          if (failure !== undefined) throw failure.error;
          fold(event);
          if (!live) options.onProgress?.(position - start, total);
          if (pending >= batchEvents) {
            clearTimeout(timer);
            timer = undefined;
            await flush();
          } else {
            timer ??= setTimeout(() => {
              timer = undefined;
              flush().catch(fail);
            }, batchMs);
          }
        },
        { from: { after: start }, ...(filter === undefined ? {} : { filter }) },
      );
      subscription.caughtUp
        .then(async () => {
          if (failure !== undefined || signal?.aborted === true) return;
          clearTimeout(timer);
          timer = undefined;
          // The head is written at once, so the table is current when the run says it is.
          await flush(Math.max(position, subscription.position));
          live = true;
          options.onProgress?.(total ?? position - start, total);
          options.onCaughtUp?.(checkpointed);
        })
        .catch(fail);
      subscription.done.then(() => wake(), fail);
      await ended;
      await subscription.stop();
      clearTimeout(timer);
      await writing.catch(fail);
      if (failure !== undefined) throw failure.error;
      // Everything the subscription examined is folded: the filter's skipped events too.
      await flush(Math.max(position, subscription.position));
    }
    await writing;
    return { table, target: target.description, position: Math.max(checkpointed, start), events, rows: rowCount, resumedFrom: resumed?.position, batches, stopped };
  } finally {
    await claim?.release();
    await target?.close();
  }
}

/** Refuses a table this projection did not make: another projection's, or one no checkpoint names. */
function checkOwnTable(target: string, table: string, projectionName: string, checkpoint: SqlCheckpoint | undefined, tableExists: boolean): void {
  if (checkpoint !== undefined && checkpoint.projection !== projectionName) {
    throw new ProjectionCheckpointError(`${target} table ${table}`, `it belongs to projection ${JSON.stringify(checkpoint.projection)}, not ${JSON.stringify(projectionName)}; give another --table`);
  }
  if (checkpoint === undefined && tableExists) {
    throw new ProjectionTableConflictError(table, `it exists in ${target} and no projection checkpoint names it: a run writes only tables it made; give another --table, or drop it`);
  }
}

/** Refuses to resume a checkpoint folded otherwise than this run asks (as file checkpoints do). */
function checkResume(where: string, checkpoint: SqlCheckpoint, params: ProjectionParams, key: readonly string[] | undefined, from: number | undefined, tableExists: boolean): void {
  if (JSON.stringify(checkpoint.params) !== JSON.stringify(sorted(params))) {
    throw new ProjectionCheckpointError(where, `its state was folded with ${describeParams(checkpoint.params)}, not ${describeParams(params)}; rebuild to fold with these, or give the same`);
  }
  if (JSON.stringify(checkpoint.key ?? null) !== JSON.stringify(key ?? null)) {
    throw new ProjectionCheckpointError(where, `it was written with key ${JSON.stringify(checkpoint.key ?? null)}, the projection now declares ${JSON.stringify(key ?? null)}; rebuild to write it anew`);
  }
  if (from !== undefined && from !== checkpoint.position) {
    throw new ProjectionCheckpointError(where, `it resumes after position ${checkpoint.position}, but from ${from} was asked; rebuild to start from ${from}, or drop from to resume`);
  }
  if (checkpoint.columns.length > 0 && !tableExists) {
    throw new ProjectionCheckpointError(where, 'its checkpoint is there but the table is gone; rebuild to write it anew');
  }
}

function defaultOwner(): string {
  return `projection run on ${hostname()} pid ${process.pid} ${randomUUID().slice(0, 8)}`;
}

function sorted(params: ProjectionParams): ProjectionParams {
  return Object.fromEntries(Object.entries(params).sort(([a], [b]) => a.localeCompare(b)));
}

function describeParams(params: ProjectionParams): string {
  const entries = Object.entries(params);
  return entries.length === 0 ? 'no parameters' : entries.map(([name, value]) => `${name}=${value}`).join(' ');
}

/** A held claim on the table, renewed every third of its length until released; tells `onLost` when it is gone. */
class TableClaim {
  private heldUntil: number;
  private lost: ProjectionClaimLostError | undefined;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> = Promise.resolve();
  private lostListener: ((error: ProjectionClaimLostError) => void) | undefined;
  private released = false;

  private constructor(
    private readonly store: EventStore,
    private readonly name: string,
    private readonly owner: string,
    private readonly ms: number,
    held: Claim,
  ) {
    this.heldUntil = Date.parse(held.expiresAt);
    this.schedule();
  }

  /** Takes the claim; when another run holds it, fails naming that run, or (`wait`) asks again until it is free. */
  static async take(store: EventStore, name: string, owner: string, ms: number, wait: boolean, signal: AbortSignal | undefined, onWaiting?: (claim: Claim) => void): Promise<TableClaim> {
    for (let asked = 0; ; asked += 1) {
      const now = new Date();
      const claim = await store.claim(name, owner, new Date(now.getTime() + ms).toISOString(), now.toISOString());
      if (claim.owner === owner) return new TableClaim(store, name, owner, ms, claim);
      // Stopped while waiting: the holder is what the run ends on.
      if (!wait || signal?.aborted === true) throw new ProjectionClaimedError(claim);
      if (asked === 0) onWaiting?.(claim);
      // Until the holder's claim would lapse, but at least every second (it may release it sooner).
      await pause(Math.min(1_000, Math.max(50, Date.parse(claim.expiresAt) - Date.now())), signal ?? new AbortController().signal);
    }
  }

  onLost(listener: (error: ProjectionClaimLostError) => void): void {
    this.lostListener = listener;
    if (this.lost !== undefined) listener(this.lost);
  }

  /** Before a batch: throws when the claim is lost; renews it first when a third of it has gone by. */
  async ensure(): Promise<void> {
    if (this.lost === undefined && this.heldUntil - Date.now() < (this.ms * 2) / 3) await this.renew();
    if (this.lost === undefined && Date.now() >= this.heldUntil) this.lose(`it lapsed at ${new Date(this.heldUntil).toISOString()} before it could be renewed`);
    if (this.lost !== undefined) throw this.lost;
  }

  async release(): Promise<void> {
    this.released = true;
    clearTimeout(this.timer);
    await this.renewing.catch(() => undefined);
    if (this.lost === undefined) await this.store.releaseClaim(this.name, this.owner).catch(() => undefined);
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      void this.renew().finally(() => {
        if (!this.released && this.lost === undefined) this.schedule();
      });
    }, Math.max(50, Math.floor(this.ms / 3)));
  }

  private renew(): Promise<void> {
    this.renewing = this.renewing.then(async () => {
      if (this.released || this.lost !== undefined) return;
      const now = new Date();
      try {
        const claim = await this.store.claim(this.name, this.owner, new Date(now.getTime() + this.ms).toISOString(), now.toISOString());
        if (claim.owner === this.owner) this.heldUntil = Date.parse(claim.expiresAt);
        else this.lose(`${claim.owner} holds it now (until ${claim.expiresAt})`);
      } catch (error) {
        // The store may be back before the claim lapses: only a lapsed claim is lost.
        if (Date.now() >= this.heldUntil) this.lose(`it could not be renewed before it lapsed: ${(error as Error).message}`);
      }
    });
    return this.renewing;
  }

  private lose(reason: string): void {
    this.lost ??= new ProjectionClaimLostError(this.name, reason);
    clearTimeout(this.timer);
    this.lostListener?.(this.lost);
  }
}
