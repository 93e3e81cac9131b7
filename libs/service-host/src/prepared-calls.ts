import type { ExecutionId, ExecutionState } from '@oncegate/domain';
import { LRUCache } from 'lru-cache';
import type { ToolContract } from '@oncegate/contracts';
import type { SealedStore } from '@oncegate/sealed-store';
import type { HttpBindingChecked } from '@oncegate/host-vault';
import { openArguments } from './sealed-arguments';

/** How many prepared calls one process keeps; the oldest is dropped first. */
export const DEFAULT_PREPARED_CALLS = 1024;

/** The credential binding checked against the rendered URL, and the vault journal position it held at. */
export type CheckedBinding = HttpBindingChecked;

/**
 * What one execution's attempts are computed from, computed once: its arguments opened from the sealed store.
 * A channel keeps what it derives from them with the call object as its key (the HTTP channel's rendered request:
 * `preparedRequest` of @oncegate/channel-http), so it too is computed once. Holds no credential.
 */
export interface PreparedCall {
  readonly executionId: ExecutionId;
  readonly argumentsRef: string;
  /** The contract the rendering came from: a reloaded contract is another object, and is prepared again. */
  readonly tool: ToolContract;
  readonly args: Readonly<Record<string, unknown>>;
  /** Set once the credential binding was checked against the URL the call goes to (HTTP tools). */
  binding?: CheckedBinding;
}

/**
 * The prepared calls of this process, by execution id: authorization prepares a call when it climbs the ladder,
 * the dispatcher finds it there (preflight and attempt alike) and forgets it once the execution settles. Only a
 * cache: on a miss (another process authorized it, the process restarted, the entry was evicted) the call is
 * prepared again from the journal's state and the sealed store, exactly as the first time. An entry is used only
 * for the same arguments ref and the same contract object; anything else is prepared afresh.
 */
export class PreparedCalls {
  private readonly calls: LRUCache<ExecutionId, { argumentsRef: string; tool: ToolContract; call: Promise<PreparedCall | undefined> }>;

  constructor(
    private readonly sealed: SealedStore,
    max = DEFAULT_PREPARED_CALLS,
  ) {
    this.calls = new LRUCache({ max });
  }

  /** The prepared call of an accepted execution; `undefined` when its arguments are not in the sealed store. */
  get(state: ExecutionState, tool: ToolContract): Promise<PreparedCall | undefined> {
    const executionId = state.executionId!;
    const argumentsRef = state.accepted?.argumentsRef;
    if (argumentsRef === undefined || argumentsRef === null) return Promise.resolve(undefined);
    const cached = this.calls.get(executionId);
    if (cached !== undefined && cached.argumentsRef === argumentsRef && cached.tool === tool) return cached.call;
    const call = this.prepare(state, executionId, argumentsRef, tool);
    const entry = { argumentsRef, tool, call };
    this.calls.set(executionId, entry);
    // A call that could not be prepared (its blob missing or unreadable) is not kept: the next look tries again.
    void call.then(
      (prepared) => prepared === undefined && this.drop(executionId, entry),
      () => this.drop(executionId, entry),
    );
    return call;
  }

  /** The execution settled (or was denied): its prepared call is no longer needed. */
  forget(executionId: ExecutionId): void {
    this.calls.delete(executionId);
  }

  /** Forgets every prepared call (as a restart would). */
  clear(): void {
    this.calls.clear();
  }

  get size(): number {
    return this.calls.size;
  }

  private drop(executionId: ExecutionId, entry: unknown): void {
    if (this.calls.peek(executionId) === entry) this.calls.delete(executionId);
  }

  private async prepare(state: ExecutionState, executionId: ExecutionId, argumentsRef: string, tool: ToolContract): Promise<PreparedCall | undefined> {
    const args = await openArguments(this.sealed, state);
    if (args === undefined) return undefined;
    return { executionId, argumentsRef, tool, args };
  }
}
