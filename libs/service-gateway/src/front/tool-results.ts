import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { executionStatusView, type ExecutionState, type ExecutionStatus } from '@oncegate/domain';
import type { StoredResult } from '@oncegate/service-host/stored-result';

export type { StoredResult } from '@oncegate/service-host/stored-result';

export interface AnswerFlags {
  /** This call matched an earlier execution instead of creating one. */
  readonly attached: boolean;
  /** The stored result was handed out again inside the redelivery grace. */
  readonly replayed: boolean;
}

/** What the agent is told about its execution in every answer (docs/design.md section 9). */
export function executionInfo(state: ExecutionState, flags: AnswerFlags) {
  const view = executionStatusView(state);
  return {
    id: view.executionId,
    state: view.state,
    attached: flags.attached,
    replayed: flags.replayed,
    attempts: view.attempts,
    firstDispatchedAt: view.firstDispatchedAt,
    targetStatus: view.targetStatus,
    exitCode: view.exitCode,
    ...(state.approval
      ? {
          approval: {
            decision: state.approval.decision,
            scope: state.approval.scope,
            runId: state.approval.runId,
            requestedAt: state.approval.requestedAt,
            expiresAt: state.approval.expiresAt,
          },
        }
      : {}),
    ...(state.denial ? { denial: { basis: state.denial.basis, reason: state.denial.reason } } : {}),
    ...(state.outcome?.source === 'marker' ? { outcomeSource: 'marker' as const, hostOutput: markerOutput(state) } : {}),
    ...(state.outcome?.source === 'not_sent' ? { outcomeSource: 'not_sent' as const, notSent: state.outcome.notSentReason ?? null } : {}),
  };
}

/**
 * Where the output of a command whose outcome came from its marker is: the files left on the host (`null` when
 * none is kept), and the attempt whose marker it was.
 */
function markerOutput(state: ExecutionState) {
  const probe = state.markerProbe;
  return { writtenBy: probe?.markerAttempt ?? null, kept: probe?.keptOutput ?? null };
}

/** The outcome came from the marker, not from an answer: say so, and where the output is, never an output it lacks. */
function markerNote(state: ExecutionState): string {
  if (state.outcome?.source !== 'marker') return '';
  const { writtenBy, kept } = markerOutput(state);
  const by = writtenBy === null ? '' : ` (written by attempt ${writtenBy})`;
  const where =
    kept === null
      ? 'none of it is kept on the host'
      : `it is kept on the host ${kept.host} at ${kept.paths.join(' and ')}`;
  return (
    ` The outcome was established from the durable marker on the host${by}: the connection was lost before the ` +
    `command's output came back, so no output is included here; ${where}.`
  );
}

const MAX_TEXT = 64 * 1024;

function parsedBody(result: StoredResult | undefined): unknown {
  if (result === undefined || result.encoding !== 'utf8' || result.truncated) return undefined;
  if (!result.contentType?.includes('json')) return undefined;
  try {
    return JSON.parse(result.body);
  } catch {
    return undefined;
  }
}

function bodyText(result: StoredResult | undefined): string {
  if (result === undefined || result.body === '') return '';
  const text = result.encoding === 'utf8' ? result.body : `(binary body, ${Buffer.from(result.body, 'base64').length} bytes)`;
  const clipped = text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}\n… (${text.length - MAX_TEXT} more characters)` : text;
  return `\n\n${clipped}${result.truncated ? '\n… (the target sent more than the response cap; the rest was not kept)' : ''}`;
}

/** Why the marker of the current attempt could not be read, when that is what holds the execution. */
function probeFailure(state: ExecutionState): string {
  const probe = state.markerProbe;
  if (probe?.marker !== 'probe_failed' || probe.attempt !== state.attempts) return '';
  return ` The marker on the host could not be read: ${probe.failure ?? 'no reason recorded'}.`;
}

/** The exit status of a command whose outcome came from its marker (with a response, the body says it). */
function exited(state: ExecutionState): string {
  return state.outcome?.source === 'marker' && state.outcome.exitCode !== null ? ` (exit status ${state.outcome.exitCode})` : '';
}

function headline(state: ExecutionState, tool: string, result: StoredResult | undefined): { text: string; isError: boolean } {
  const id = state.executionId;
  const status = state.status as ExecutionStatus;
  const answer = state.outcome?.targetStatus ?? result?.status;
  const answered = answer != null ? ` (target answered ${answer})` : '';
  switch (status) {
    case 'completed':
    case 'completed_result_not_delivered':
    case 'delivered':
      if (state.outcome?.outcome === 'failed') {
        return { text: `${tool} failed${answered}${exited(state)}. Execution ${id}; nothing was retried.${markerNote(state)}`, isError: true };
      }
      return { text: `${tool} completed${answered}${exited(state)}. Execution ${id}.${markerNote(state)}`, isError: false };
    case 'failed':
      return { text: `${tool} failed${answered}${exited(state)}. Execution ${id}; nothing was retried.${markerNote(state)}`, isError: true };
    case 'denied':
      return {
        text: `${tool} was denied (${state.denial?.basis ?? 'policy'}): ${state.denial?.reason ?? ''} Nothing was sent. Execution ${id}.`,
        isError: true,
      };
    case 'outcome_unknown':
      return {
        text:
          `Outcome unknown: the request to ${tool} may have reached the target, and no answer came back ` +
          `(${state.unknownOutcome?.reason ?? 'no response'}). Nothing was re-sent. Execution ${id}: check the ` +
          'target before deciding anything; calling again with the same arguments attaches to this execution.',
        isError: false,
      };
    case 'needs_review':
      return {
        text:
          `Held for review (${state.review?.reason ?? 'review required'}): the outcome of ${tool} is not known and ` +
          `the gateway will not send it again on its own. Execution ${id}; an operator resolves it.${probeFailure(state)}`,
        isError: false,
      };
    case 'cancelled':
      return { text: `${tool} was cancelled before anything was sent. Execution ${id}.`, isError: true };
    case 'expired':
      return { text: `Execution ${id} of ${tool} expired before it was sent.`, isError: true };
    case 'abandoned':
      return { text: `Execution ${id} of ${tool} was abandoned by an operator; its outcome stays as found.`, isError: false };
    case 'awaiting_approval': {
      const approval = state.approval;
      const what = approval?.scope === 'run' ? `a session grant for run ${approval.runId}` : 'an approval of this call';
      return {
        text:
          `${tool} is waiting for ${what} (asked by ${approval?.requestedBy ?? 'policy'} at ${approval?.requestedAt ?? '?'}` +
          `${approval?.expiresAt ? `; denied if nobody decides by ${approval.expiresAt}` : ''}). Nothing has been sent. ` +
          `Execution ${id}: poll execution_status with this id, or call again with the same arguments to attach to it; ` +
          'calling again never asks twice.',
        isError: false,
      };
    }
    case 'initial':
    case 'accepted':
    case 'authorized':
    case 'dispatched':
      return {
        text:
          `${tool} is still in progress (${status}). Execution ${id}: poll execution_status with this id, or call ` +
          'again with the same arguments to attach to it. Nothing will be sent twice.',
        isError: false,
      };
    default: {
      const never: never = status;
      return { text: String(never), isError: true };
    }
  }
}

export function toolResult(
  tool: string,
  state: ExecutionState,
  flags: AnswerFlags,
  result: StoredResult | undefined,
): CallToolResult {
  const { text, isError } = headline(state, tool, result);
  const execution = executionInfo(state, flags);
  const response = parsedBody(result);
  return {
    content: [{ type: 'text', text: `${text}${bodyText(result)}` }],
    structuredContent: { execution, ...(response !== undefined ? { response } : {}) },
    isError,
    _meta: { 'io.oncegate/execution': execution },
  };
}
