// The console's calls to the gateway (`/console/api`). The session cookie is HttpOnly and sent by the browser;
// the anti-forgery token lives in this module's memory only and goes with every decision. The answers' shapes are
// the server's own (@oncegate/console-api): a change to one is a type error here.
import type {
  ApprovalsAnswer,
  ApprovalView,
  ConsoleErrorCode,
  DecisionRequest,
  DecisionsAnswer,
  DecisionsQuery,
  ErrorAnswer,
  ExecutionsAnswer,
  Investigation,
  QueueCountsAnswer,
  ResolutionRequest,
  ReviewResolution,
  ReviewsAnswer,
  ReviewView,
  SessionAnswer,
  SignInRequest,
} from '@oncegate/console-api';

/** A refusal as the console shows it: the server's error, or `unreachable` when the gateway did not answer. */
export interface ApiError {
  readonly status: number;
  /** `error`: the answer was not the gateway's JSON (a proxy's page). */
  readonly code: ConsoleErrorCode | 'unreachable' | 'error';
  readonly message: string;
  readonly state?: string;
}

export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ApiError };

const BASE = '/console/api';
let csrfToken: string | undefined;

export function remember(session: SessionAnswer | undefined): void {
  csrfToken = session?.csrfToken;
}

async function call<T>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: SignInRequest | DecisionRequest | ResolutionRequest): Promise<Result<T>> {
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
  const parsed = (await response.json().catch(() => ({}))) as Partial<ErrorAnswer<ConsoleErrorCode>>;
  if (response.ok) return { ok: true, value: parsed as T };
  return {
    ok: false,
    error: { status: response.status, code: parsed.error?.code ?? 'error', message: parsed.error?.message ?? `HTTP ${response.status}`, ...(parsed.error?.state ? { state: parsed.error.state } : {}) },
  };
}

export const api = {
  session: () => call<SessionAnswer>('GET', '/session'),
  signIn: (token: string) => call<SessionAnswer>('POST', '/session', { token }),
  signOut: () => call<void>('DELETE', '/session'),
  approvals: () => call<ApprovalsAnswer>('GET', '/approvals'),
  decide: (executionId: string, decision: 'approve' | 'deny', reason: string) =>
    call<ApprovalView>('POST', `/approvals/${encodeURIComponent(executionId)}/${decision}`, { reason }),
  reviews: () => call<ReviewsAnswer>('GET', '/reviews'),
  resolve: (executionId: string, resolution: ReviewResolution, reason: string, resend = false) =>
    call<ReviewView>('POST', `/reviews/${encodeURIComponent(executionId)}/resolve`, { resolution, reason, ...(resend ? { resend } : {}) }),
  investigation: (executionId: string) => call<Investigation>('GET', `/executions/${encodeURIComponent(executionId)}`),
  counts: () => call<QueueCountsAnswer>('GET', '/counts'),
  decisions: (query: DecisionsQuery) => call<DecisionsAnswer>('GET', `/decisions${queryString(query)}`),
  /** The executions index, filtered by the page's URL parameters as they are (the server reads and refuses them). */
  executions: (parameters: URLSearchParams) => call<ExecutionsAnswer>('GET', `/executions${parameters.toString() === '' ? '' : `?${parameters.toString()}`}`),
};

/** `?by=alice&limit=20`: the given, non-empty parameters. */
function queryString(query: DecisionsQuery): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
