import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { ExecutionState, ExecutionStatus } from '@oncegate/domain';
import { progressMessage } from './call-progress';
import { ANSWERABLE } from './tool-calls';

/** The tasks extension of the 2026-07-28 revision. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** How often a client is asked to poll `tasks/get`. */
export const TASK_POLL_INTERVAL_MS = 1_000;

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'cancelled' | 'failed';

/** The execution is still moving (not a state a call is answered with): its task is `working`. */
const working = (status: ExecutionStatus) => !ANSWERABLE.has(status);

/** Whether a request's per-request client capabilities (2026-07-28 envelope) declare the tasks extension. */
export function clientSupportsTasks(envelope: Record<string, unknown> | undefined): boolean {
  const capabilities = envelope?.['io.modelcontextprotocol/clientCapabilities'] as { extensions?: Record<string, unknown> } | undefined;
  const declared = capabilities?.extensions?.[TASKS_EXTENSION];
  return typeof declared === 'object' && declared !== null;
}

/**
 * An execution as a task (`tasks/get`, and the seed a `tools/call` returns): the task id is the execution id; a task
 * is `working` while the execution moves (awaiting approval included: a person decides, not the client, so it is
 * never `input_required`), `cancelled` when it was cancelled before dispatch, and `completed` with the call's answer
 * once it has one — an unknown outcome, a denial or a review hold included, as a call would be answered. `failed` is
 * left to JSON-RPC errors, which an execution never is. The journal keeps executions: no time-to-live.
 */
export function taskOf(execution: { readonly state: ExecutionState; readonly answer: CallToolResult; readonly lastUpdatedAt: string }): Record<string, unknown> {
  const { state, answer, lastUpdatedAt } = execution;
  const status: TaskStatus = working(state.status) ? 'working' : state.status === 'cancelled' ? 'cancelled' : 'completed';
  const headline = answer.content[0]?.type === 'text' ? answer.content[0].text.split('\n')[0] : undefined;
  return {
    taskId: state.executionId,
    status,
    statusMessage: (status === 'working' ? progressMessage(state) : undefined) ?? headline ?? state.status,
    createdAt: state.accepted!.acceptedAt,
    lastUpdatedAt,
    ttlMs: null,
    ...(status === 'working' ? { pollIntervalMs: TASK_POLL_INTERVAL_MS } : {}),
    // The call's own result as the revision frames every result.
    ...(status === 'completed' ? { result: { ...answer, resultType: 'complete' } } : {}),
  };
}

/** Whether an answer is the "still in progress" one: the call would go on as a task. */
export function stillMoving(answer: CallToolResult): boolean {
  const state = (answer.structuredContent as { execution?: { state?: string } } | undefined)?.execution?.state;
  return state !== undefined && working(state as ExecutionStatus);
}
