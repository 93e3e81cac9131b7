// The console's calls to the gateway (`/console/api`). The session cookie is HttpOnly and sent by the browser;
// the anti-forgery token lives in this module's memory only and goes with every decision.

export interface Session {
  readonly actor: string;
  readonly csrfToken: string;
}

export interface ApiError {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly state?: string;
}

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ApiError };

const BASE = '/console/api';
let csrfToken: string | undefined;

export function remember(session: Session | undefined): void {
  csrfToken = session?.csrfToken;
}

async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: object): Promise<Result<T>> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken !== undefined) headers['x-oncegate-csrf'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(`${BASE}${path}`, {
      method,
      headers,
      credentials: 'same-origin',
      cache: 'no-store',
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch {
    return { ok: false, error: { status: 0, code: 'unreachable', message: 'the gateway did not answer; try again' } };
  }
  if (response.status === 204) return { ok: true, value: undefined as T };
  const parsed = (await response.json().catch(() => ({}))) as { error?: Omit<ApiError, 'status'> };
  if (response.ok) return { ok: true, value: parsed as T };
  return {
    ok: false,
    error: { status: response.status, code: parsed.error?.code ?? 'error', message: parsed.error?.message ?? `HTTP ${response.status}`, ...(parsed.error?.state ? { state: parsed.error.state } : {}) },
  };
}

export const api = {
  session: () => call<Session>('GET', '/session'),
  signIn: (token: string) => call<Session>('POST', '/session', { token }),
  signOut: () => call<void>('DELETE', '/session'),
  approvals: () => call<{ approvals: ApprovalView[] }>('GET', '/approvals'),
  decide: (executionId: string, decision: 'approve' | 'deny', reason: string) =>
    call<ApprovalView>('POST', `/approvals/${encodeURIComponent(executionId)}/${decision}`, { reason }),
  reviews: () => call<{ reviews: ReviewView[] }>('GET', '/reviews'),
  resolve: (executionId: string, resolution: Resolution, reason: string) =>
    call<ReviewView>('POST', `/reviews/${encodeURIComponent(executionId)}/resolve`, { resolution, reason }),
  investigation: (executionId: string) => call<Investigation>('GET', `/executions/${encodeURIComponent(executionId)}`),
};

export type Resolution = 'completed' | 'not_executed' | 'abandoned';

export interface ApprovalView {
  readonly executionId: string;
  readonly state: string;
  readonly summary: string;
  readonly actor: string;
  readonly runId: string | null;
  readonly tool: string;
  readonly channel: string;
  readonly operationClass: string;
  readonly fingerprint: string;
  readonly intentScope: string;
  readonly acceptedAt: string;
  readonly target: {
    readonly name: string;
    readonly method: string | null;
    readonly url: string | null;
    readonly sshHost: string | null;
    readonly argv: readonly string[] | null;
    readonly inContract: boolean;
  };
  readonly arguments: Record<string, unknown>;
  readonly approval: {
    readonly scope: string;
    readonly grants: string;
    readonly requestedBy: string;
    readonly requestedAt: string;
    readonly reason: string;
    readonly expiresAt: string | null;
    readonly decision: 'pending' | 'granted' | 'denied' | 'closed';
    readonly decidedBy: string | null;
    readonly decidedAt: string | null;
    readonly decisionReason: string | null;
  };
  readonly attachedCalls: ReadonlyArray<{ readonly correlation: Record<string, unknown>; readonly returned: string; readonly attachedAt: string }>;
}

export interface ReviewView {
  readonly executionId: string;
  readonly state: string;
  readonly attempts: number;
  readonly firstDispatchedAt: string | null;
  readonly targetStatus: number | null;
  readonly tool: string;
  readonly actor: string;
  readonly operationClass: string;
  readonly review: {
    readonly attempt: number;
    readonly reason: string;
    readonly requiredAt: string;
    readonly resolution: string | null;
    readonly resolvedBy: string | null;
    readonly resolvedAt: string | null;
  } | null;
  readonly evidence: {
    readonly markerProbe: { readonly attempt: number; readonly marker: string; readonly exitStatus: number | null; readonly probedAt: string; readonly failure?: string | null } | null;
    readonly statusQuery: { readonly attempt: number; readonly preconditionHolds: boolean; readonly observedStatus: string | null; readonly queriedAt: string } | null;
  };
  readonly record: { readonly target: string; readonly method?: string; readonly arguments: Record<string, unknown>; readonly intent_scope: string };
  readonly events: ReadonlyArray<{ readonly revision: number; readonly type: string; readonly recordedAt: string; readonly actor: string; readonly detail: string }>;
}

export interface TimelineEntry {
  readonly time: string;
  readonly position: number;
  readonly stream: string;
  readonly revision: number;
  readonly type: string;
  readonly executionId: string | null;
  readonly actor: string | null;
  readonly correlation: string;
  readonly detail: string;
}

export interface Answer {
  readonly question: string;
  readonly summary: string;
  readonly evidence: number[];
}

export interface Investigation {
  readonly found: boolean;
  readonly executions: ReadonlyArray<{ readonly executionId: string; readonly tool: string; readonly actor: string; readonly scope: string; readonly acceptedAt: string; readonly status: string }>;
  readonly timeline: readonly TimelineEntry[];
  readonly answers: {
    readonly processes: Answer;
    readonly firstCall: Answer;
    readonly outcome: Answer;
    readonly delivery: Answer;
    readonly secondCall: Answer & {
      readonly facts: {
        readonly attaches: ReadonlyArray<{
          readonly executionId: string;
          readonly at: string;
          readonly returned: string;
          readonly replayed: boolean;
          readonly jsonRpcId: string | number | null;
          readonly sessionId: string | null;
          readonly position: number;
        }>;
      };
    };
  };
}
