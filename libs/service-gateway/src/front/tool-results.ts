import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { answeredWithError, executionStatusView, retriesForWholeWindow, type ExecutionState, type ExecutionStatus } from '@oncegate/domain';
import type { StoredResult } from '@oncegate/service-host';

export type { StoredResult } from '@oncegate/service-host';

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
    /** The target's definite answer was an error: the state is `completed`, the answer `isError`. */
    errorAnswer: view.errorAnswer,
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
    ...(state.outcome?.source === 'task' ? { outcomeSource: 'task' as const } : {}),
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

/**
 * The outcome came from the marker, not from an answer: say so, and where the output is, never an output it lacks.
 * From the attempt's task at the target: the answer was lost, and the task, asked for again, gave it.
 */
function markerNote(state: ExecutionState): string {
  if (state.outcome?.source === 'task') return ' The answer to the call was lost; this is what its task at the target gave when asked again (nothing was sent twice).';
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

/** What the target answered, in words: its status, the command's exit status, or (a channel with neither, SQL) the answer itself. */
function answerWords(state: ExecutionState, result: StoredResult | undefined): string {
  const status = state.outcome?.targetStatus ?? result?.status ?? null;
  if (status !== null) return `the target answered ${status}`;
  const exit = state.outcome?.exitCode ?? result?.exitCode ?? null;
  if (exit !== null) return `the command exited with status ${exit}`;
  return result !== undefined && result.body !== '' ? 'the answer below is an error' : 'the answer was an error';
}

/** How a retry of the same call is found: the same arguments, and the scope the fingerprint holds besides them. */
function sameCall(state: ExecutionState): string {
  const scope = state.accepted?.intentScope;
  if (scope?.kind === 'key' && scope.source === 'caller') return 'with the same arguments and idempotency key';
  if (scope?.kind === 'run') return 'with the same arguments in the same run';
  return 'with the same arguments';
}

/** Until when a retry still matches: the correlation window, unless it lasts until confirmed. */
function matchedUntil(state: ExecutionState): string {
  const ends = state.accepted?.windowEndsAt ?? null;
  return ends === null ? '' : ` until its correlation window ends at ${ends}`;
}

/**
 * For a class whose repeat does harm (conditional_write, irreversible, remote_command), an error answer is no proof
 * that nothing happened, so the agent is told plainly; and what a retry gets, which is true because these classes
 * match a repeat inside the whole correlation window (`retriesForWholeWindow`) and a completed execution answers a
 * match with its stored result.
 */
function mayHaveActed(state: ExecutionState): string {
  const operationClass = state.accepted?.operationClass;
  if (operationClass === undefined || !retriesForWholeWindow(operationClass)) return '';
  return (
    ' The target may have acted: it answered with an error, and an error answer does not prove that nothing happened; ' +
    'check the target before deciding anything. ' +
    `Calling again ${sameCall(state)} is matched to this execution${matchedUntil(state)} and gets this same answer back: ` +
    'it is not sent again.'
  );
}

/** A failure in which nothing was sent: why, and what a retry gets (the same failure, inside the window). */
function notSentWords(state: ExecutionState, tool: string): string {
  const id = state.executionId;
  const why = state.outcome?.source === 'not_sent' ? (state.outcome.notSentReason ?? 'no reason recorded') : 'no reason recorded';
  return (
    `${tool} failed: nothing was sent (${why}); nothing reached the target. Execution ${id}: calling again ` +
    `${sameCall(state)} returns this failure${matchedUntil(state)}; to try again, call with ` +
    '_meta["io.oncegate/new-intent"]: true.'
  );
}

/**
 * A review found the last attempt not executed, and nothing is sent on that alone (docs/gateway.md, review queue):
 * the agent's retry sends the next attempt, which is what a matching call does in this state (`send_again`).
 */
function notExecutedWords(state: ExecutionState, tool: string): string {
  const review = state.review;
  const who = review?.resolvedBy ? ` (${review.resolvedBy}, at ${review.resolvedAt})` : '';
  const resend = review?.resend;
  const waiting =
    resend != null && resend.confirmedBy === null
      ? ` ${resend.requestedBy} asked to send it again; that waits for a second operator to confirm it.`
      : '';
  return (
    `An operator found that ${tool} was not executed${who}; nothing has been sent since. Execution ${state.executionId}: call again ` +
    `${sameCall(state)} to send it — it goes out as attempt ${state.attempts + 1} under the same execution id and ` +
    `idempotency key.${waiting}`
  );
}

/**
 * The sentence an answer starts with, and whether it is an error (docs/gateway.md, what the agent is told). A
 * definite answer of the target is `completed` whatever its status, with `isError` when the answer is an error;
 * `failed` is said only when nothing was sent.
 */
export function headline(state: ExecutionState, tool: string, result: StoredResult | undefined): { text: string; isError: boolean } {
  const id = state.executionId;
  const status = state.status as ExecutionStatus;
  switch (status) {
    case 'completed':
    case 'completed_result_not_delivered':
    case 'delivered': {
      if (answeredWithError(state.outcome)) {
        return {
          text: `${tool} completed with an error answer: ${answerWords(state, result)}. Execution ${id}.${mayHaveActed(state)}${markerNote(state)}`,
          isError: true,
        };
      }
      const answer = state.outcome?.targetStatus ?? result?.status;
      const answered = answer != null ? ` (target answered ${answer})` : '';
      const exited = state.outcome?.source === 'marker' && state.outcome.exitCode !== null ? ` (exit status ${state.outcome.exitCode})` : '';
      return { text: `${tool} completed${answered}${exited}. Execution ${id}.${markerNote(state)}`, isError: false };
    }
    case 'failed':
      return { text: notSentWords(state, tool), isError: true };
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
    case 'not_executed':
      return { text: notExecutedWords(state, tool), isError: false };
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
