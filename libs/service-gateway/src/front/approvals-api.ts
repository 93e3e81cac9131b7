import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import type { ApprovalsApiErrorCode, ApprovalView, ErrorAnswer, PendingApprovalsAnswer } from '@oncegate/console-api';
import type { ToolContract } from '@oncegate/contracts';
import { isExecutionId, type ExecutionId } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { decide, isApprovalRefusal, MAX_APPROVAL_REASON_LENGTH, pending, show, type ApprovalDecision } from '@oncegate/host-decisions';
import type { ApproverDirectory } from '@oncegate/host-principals';
import { tokenRefusals, type RefusalSurface } from '@oncegate/host-operations';
import { looksLikeJwt, type OAuthResource } from './oauth-resource';
import { readBodyWithin } from './request-body';

/** Where the API is mounted on the gateway's listener. */
export const APPROVALS_PATH = '/approvals';

/** A decision body is `{"reason": "..."}` of at most 1000 characters; anything near this size is not one. */
export const MAX_DECISION_BODY_BYTES = 16 * 1024;

export interface ApprovalsApiOptions {
  readonly store: EventStore;
  /** Approver tokens; agent tokens are not in it, so an agent never decides. */
  readonly approvers: ApproverDirectory;
  /** The gateway's tool contracts, for the target's request details in a view. */
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly clock: Clock;
  /** Default `MAX_DECISION_BODY_BYTES`. */
  readonly maxBodyBytes?: number;
  /** Access tokens of the identity provider that mark an approver (`oauth.approver`); none by default. */
  readonly oauth?: OAuthResource;
}

/**
 * The approver a token names: an approver token of the journal, or (with `oauth`) an access token holding the
 * approver claim. A refusal says why in words an approver can act on, and carries the OAuth challenge when the
 * token was an access token.
 */
export async function authenticateApprover(
  token: string | undefined,
  approvers: ApproverDirectory,
  oauth: OAuthResource | undefined,
  surface: RefusalSurface = 'approvals',
): Promise<{ actor: string } | { refused: string; status: number; challenge?: string }> {
  if (oauth !== undefined && token !== undefined && looksLikeJwt(token)) {
    const verified = await oauth.approverOf(`Bearer ${token}`);
    if ('actor' in verified) return verified;
    if (verified.refused.status < 500) tokenRefusals().refused(surface, 'access_token');
    return { refused: verified.refused.description, status: verified.refused.status, challenge: verified.refused.challenge };
  }
  const verdict = await approvers.verify(token);
  if ('actor' in verdict) return { actor: verdict.actor };
  tokenRefusals().refused(surface, verdict.refused, verdict.principal === undefined ? undefined : `approver:${verdict.principal}`);
  const refused =
    token === undefined
      ? 'a bearer approver token is required'
      : approvers.wellFormed(token)
        ? 'unknown or revoked approver token'
        : 'not an approver token (agent tokens cannot decide approvals; issue one with: oncegate approvers add <name>)';
  return { refused, status: 401 };
}

/** An answer other than 200; written as `{"error": {"code", "message"}}`. */
/** How a request an approver token does not admit is answered: the status, the code, the words, the headers. */
export interface ApproverRefusal {
  readonly status: 401 | 403 | 503;
  readonly code: 'unauthorized' | 'forbidden' | 'unavailable';
  readonly message: string;
  readonly headers: Record<string, string>;
}

/**
 * The approver a request's `Authorization: Bearer` names, or how to refuse it: 503 with retry-after when the identity
 * provider could not be asked, 403 for a valid token that is not an approver's, 401 with the challenge (the identity
 * provider's, or `Bearer realm="<realm>"`) otherwise. The body of a refused request is drained, so the client reads the
 * refusal instead of a reset; nothing of it is parsed or recorded.
 */
export async function approverOfRequest(
  req: IncomingMessage,
  approvers: ApproverDirectory,
  oauth: OAuthResource | undefined,
  realm: string,
): Promise<{ actor: string } | ApproverRefusal> {
  const header = req.headers.authorization;
  const token = header?.startsWith('Bearer ') ? header.slice('Bearer '.length).trim() : undefined;
  const approver = await authenticateApprover(token, approvers, oauth);
  if ('actor' in approver) return approver;
  req.resume();
  if (approver.status >= 500) return { status: 503, code: 'unavailable', message: approver.refused, headers: { 'retry-after': '5' } };
  if (approver.status === 403) return { status: 403, code: 'forbidden', message: approver.refused, headers: { 'www-authenticate': approver.challenge ?? `Bearer realm="${realm}"` } };
  return { status: 401, code: 'unauthorized', message: approver.refused, headers: { 'www-authenticate': approver.challenge ?? `Bearer realm="${realm}"` } };
}

/** A JSON answer of the approver APIs, never cached. */
export function writeApiJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
  res.end(JSON.stringify(body));
}

class ApprovalsApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ApprovalsApiErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    /** For 409: the execution's state. */
    readonly state?: string,
  ) {
    super(message);
  }
}

const DECISIONS: Readonly<Record<string, ApprovalDecision>> = { approve: 'approve', deny: 'deny' };

/**
 * The HTTP API for people deciding approvals, on the gateway's listener under `/approvals`:
 *
 * - `GET /approvals`: the pending requests, oldest first;
 * - `GET /approvals/<execution-id>`: one request with everything needed to decide it;
 * - `POST /approvals/<execution-id>/approve` and `/deny` with `{"reason": "..."}`.
 *
 * Every request needs an approver token (`oncegate approvers add`); the decision is recorded as
 * `approver:<name>`. It adds no rules of its own: the approval queue decides, and refusals are mapped to
 * status codes in `errorOf`.
 */
export class ApprovalsApi {
  readonly prefix = APPROVALS_PATH;
  private readonly log = new Logger('approvals-api');

  constructor(private readonly options: ApprovalsApiOptions) {}

  /** Answers one request under `/approvals`; never throws (every failure is a JSON error response). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const actor = await this.authenticate(req);
      await this.route(req, res, actor);
    } catch (error) {
      const failure = errorOf(error);
      if (failure.status === 500) this.log.error(`request failed: ${(error as Error)?.message ?? error}`);
      writeError(res, failure);
    }
  }

  private async authenticate(req: IncomingMessage): Promise<string> {
    const approver = await approverOfRequest(req, this.options.approvers, this.options.oauth, 'oncegate-approvals');
    if ('actor' in approver) return approver.actor;
    throw new ApprovalsApiError(approver.status, approver.code, approver.message, approver.headers);
  }

  private async route(req: IncomingMessage, res: ServerResponse, actor: string): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const parts = path.slice(this.prefix.length).split('/').filter((part) => part.length > 0);
    const [id, action, ...rest] = parts;
    if (id === undefined) {
      requireMethod(req, 'GET');
      return writeApiJson(res, 200, { approvals: await pending(this.options.store, this.options.clock) } satisfies PendingApprovalsAnswer);
    }
    const executionId = executionIdOf(id);
    if (action === undefined) {
      requireMethod(req, 'GET');
      return writeApiJson(res, 200, (await show(this.options.store, executionId, { tools: this.options.tools, clock: this.options.clock })) satisfies ApprovalView);
    }
    const decision = DECISIONS[action];
    if (decision === undefined || rest.length > 0) {
      throw new ApprovalsApiError(404, 'not_found', `no such resource ${path}; use ${this.prefix}/<execution-id>/approve or /deny`);
    }
    requireMethod(req, 'POST');
    const reason = reasonOf(await readBody(req, this.options.maxBodyBytes ?? MAX_DECISION_BODY_BYTES));
    const view = await decide(this.options.store, this.options.clock, executionId, decision, actor, reason, this.options.tools);
    this.log.log(`${executionId}: approval ${view.approval.decision} by ${actor}`);
    writeApiJson(res, 200, view satisfies ApprovalView);
  }
}

function requireMethod(req: IncomingMessage, method: 'GET' | 'POST'): void {
  if (req.method === method) return;
  req.resume();
  throw new ApprovalsApiError(405, 'method_not_allowed', `method ${req.method} not allowed here; use ${method}`, { allow: method });
}

function executionIdOf(value: string): ExecutionId {
  if (!isExecutionId(value)) {
    throw new ApprovalsApiError(400, 'invalid_execution_id', `'${value.slice(0, 64)}' is not an execution id (ex_ followed by a ULID)`);
  }
  return value;
}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return readBodyWithin(req, limit, () => new ApprovalsApiError(413, 'too_large', `the request body exceeds ${limit} bytes; nothing was recorded`, { connection: 'close' }));
}

/** The `reason` of a decision body; its length is checked by the queue, with the rest of the decision. */
function reasonOf(body: Buffer): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    throw new ApprovalsApiError(400, 'invalid_json', 'the body is not valid JSON; send {"reason": "..."}');
  }
  const reason = (parsed as { reason?: unknown } | null)?.reason;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || typeof reason !== 'string') {
    throw new ApprovalsApiError(400, 'invalid_reason', `a reason is required: send {"reason": "..."} (at most ${MAX_APPROVAL_REASON_LENGTH} characters)`);
  }
  return reason;
}

/** The one place refusals and failures become status codes. */
function errorOf(error: unknown): ApprovalsApiError {
  if (error instanceof ApprovalsApiError) return error;
  if (isApprovalRefusal(error)) {
    switch (error.kind) {
      case 'invalid_decision':
        return new ApprovalsApiError(400, 'invalid_reason', error.message);
      case 'not_found':
        return new ApprovalsApiError(404, 'not_found', error.message);
      case 'not_pending':
        return new ApprovalsApiError(409, 'not_pending', error.message, {}, error.status);
      default: {
        const unhandled: never = error;
        return unhandled;
      }
    }
  }
  return new ApprovalsApiError(500, 'internal', 'internal error; check the approval (GET) before trying again');
}

function writeError(res: ServerResponse, error: ApprovalsApiError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: ErrorAnswer<ApprovalsApiErrorCode> = { error: { code: error.code, message: error.message, ...(error.state === undefined ? {} : { state: error.state }) } };
  writeApiJson(res, error.status, body, error.headers);
}
