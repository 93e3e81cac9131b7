/**
 * The same intent body accepted under different runs or scopes close together: how an analyst finds "the agent
 * restarted and did it again under a new run". The body is the canonical record without `intent_scope` (actor,
 * tool, channel, target, credential reference, method, arguments — secrets already HMACs), so the fingerprints
 * differ while the operation is the same.
 */
import { createHash } from 'node:crypto';
import { MINUTE_MS, type RedactedCanonicalRecord } from '@oncegate/domain';
import { canonicalJsonUnchecked } from '@oncegate/fingerprint';
import { EXECUTION_STREAM_PREFIX, executionEventOf } from '../execution-events';
import type { Projection, ProjectionRow } from '../projection';
import { emptyTable, getOwn, setOwn, valuesOf, type Table } from '../table';

export const DEFAULT_DUPLICATE_WINDOW_MS = 10 * MINUTE_MS;

export interface PossibleDuplicateIntentsOptions {
  /**
   * Two acceptances of one body belong to the same group when at most this far apart; a group runs on while each
   * next acceptance is within the window of the one before. Default 10 minutes.
   */
  readonly windowMs?: number;
}

export interface IntentAcceptance {
  readonly executionId: string;
  readonly scope: string;
  readonly acceptedAt: string;
  readonly fingerprint: string;
}

export interface IntentBody {
  readonly digest: string;
  readonly actor: string;
  readonly tool: string;
  readonly target: string;
  readonly method: string | null;
  /** RFC 8785 JSON of the (redacted) arguments. */
  readonly arguments: string;
  readonly acceptances: IntentAcceptance[];
}

export interface PossibleDuplicateIntentsState {
  readonly bodies: Table<IntentBody>;
}

/** The canonical record without its scope, as RFC 8785 JSON. */
export function intentBodyOf(record: RedactedCanonicalRecord): string {
  const { intent_scope: _scope, ...body } = record;
  return canonicalJsonUnchecked(body) ?? '';
}

export function possibleDuplicateIntents(
  options: PossibleDuplicateIntentsOptions = {},
): Projection<PossibleDuplicateIntentsState> {
  const windowMs = options.windowMs ?? DEFAULT_DUPLICATE_WINDOW_MS;
  if (!Number.isSafeInteger(windowMs) || windowMs < 0) {
    throw new RangeError(`windowMs must be whole non-negative milliseconds, got ${windowMs}`);
  }
  return {
    name: 'possible-duplicate-intents',
    description: `the same intent body accepted under different runs or scopes within ${windowMs / 1000} s`,
    filter: { streamPrefixes: [EXECUTION_STREAM_PREFIX], eventTypes: ['ExecutionAccepted'] },
    initialState: () => ({ bodies: emptyTable() }),
    evolve(state, recorded) {
      const found = executionEventOf(recorded);
      if (found?.event.type !== 'ExecutionAccepted') return state;
      const { record, fingerprint, acceptedAt } = found.event.data;
      const digest = createHash('sha256').update(intentBodyOf(record)).digest('hex');
      const body =
        getOwn(state.bodies, digest) ??
        setOwn(state.bodies, digest, {
          digest,
          actor: record.actor,
          tool: record.tool,
          target: record.target,
          method: record.method ?? null,
          arguments: canonicalJsonUnchecked(record.arguments) ?? '{}',
          acceptances: [],
        });
      body.acceptances.push({ executionId: found.executionId, scope: record.intent_scope, acceptedAt, fingerprint });
      return state;
    },
    rows(state): ProjectionRow[] {
      const rows: ProjectionRow[] = [];
      for (const body of valuesOf(state.bodies)) {
        for (const group of groupsWithin(body.acceptances, windowMs)) {
          const scopes = [...new Set(group.map((acceptance) => acceptance.scope))];
          if (scopes.length < 2) continue;
          const first = group[0]!;
          const last = group.at(-1)!;
          rows.push({
            intentBody: `sha256:${body.digest}`,
            actor: body.actor,
            tool: body.tool,
            target: body.target,
            method: body.method,
            arguments: body.arguments,
            executions: group.length,
            executionIds: group.map((acceptance) => acceptance.executionId).join(' '),
            scopes: scopes.join(' | '),
            acceptedAts: group.map((acceptance) => acceptance.acceptedAt).join(' '),
            firstAcceptedAt: first.acceptedAt,
            lastAcceptedAt: last.acceptedAt,
            spanMs: Date.parse(last.acceptedAt) - Date.parse(first.acceptedAt),
          });
        }
      }
      return rows.sort((a, b) => String(a['firstAcceptedAt']).localeCompare(String(b['firstAcceptedAt'])));
    },
  };
}

export const possibleDuplicateIntentsProjection = possibleDuplicateIntents();

/** Splits time-ordered acceptances wherever the gap to the previous one exceeds the window. */
function groupsWithin(acceptances: readonly IntentAcceptance[], windowMs: number): IntentAcceptance[][] {
  const ordered = [...acceptances].sort((a, b) => Date.parse(a.acceptedAt) - Date.parse(b.acceptedAt));
  const groups: IntentAcceptance[][] = [];
  let previous: number | undefined;
  for (const acceptance of ordered) {
    const at = Date.parse(acceptance.acceptedAt);
    if (previous === undefined || at - previous > windowMs) groups.push([]);
    groups.at(-1)!.push(acceptance);
    previous = at;
  }
  return groups;
}
