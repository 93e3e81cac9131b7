/** Folding one batch of the journal into rows: pure, so the unit tests and the benchmark run it without a store. */
import type { ExecutionId } from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import { evolveIndexed, executionEventOf, initialIndexedState, rowOf, type ExecutionRow, type FoldedExecution } from './execution-row';

export interface FoldedBatch {
  /** The executions the batch moved, folded to their last event in it. */
  readonly folded: Map<ExecutionId, FoldedExecution>;
  readonly rows: ExecutionRow[];
}

/** The execution ids a batch touches, to look their folded states up first. */
export function executionIdsOf(events: readonly RecordedEvent[]): ExecutionId[] {
  const ids = new Set<ExecutionId>();
  for (const recorded of events) {
    const found = executionEventOf(recorded);
    if (found !== undefined) ids.add(found.executionId);
  }
  return [...ids];
}

/**
 * Folds the batch's execution events onto the states the index holds (`known`). An event at or before the position
 * an execution was already folded to is skipped, so a batch handed over twice never counts a retry or an attempt
 * twice.
 */
export function foldBatch(events: readonly RecordedEvent[], known: ReadonlyMap<ExecutionId, FoldedExecution>): FoldedBatch {
  const folded = new Map<ExecutionId, FoldedExecution>();
  for (const recorded of events) {
    const found = executionEventOf(recorded);
    if (found === undefined) continue;
    const before = folded.get(found.executionId) ?? known.get(found.executionId);
    if (before !== undefined && recorded.position <= before.position) continue;
    const state = evolveIndexed(before?.state ?? initialIndexedState(), found.event);
    folded.set(found.executionId, { state, position: recorded.position, lastChangeAt: recorded.recordedAt });
  }
  const rows: ExecutionRow[] = [];
  for (const [id, execution] of folded) {
    const row = rowOf(id, execution);
    if (row !== undefined) rows.push(row);
  }
  return { folded, rows };
}
