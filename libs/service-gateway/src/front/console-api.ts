import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { Logger } from '@nestjs/common';
import type {
  ExecutionsAnswer,
  ApprovalsAnswer,
  ApprovalView,
  ConsoleErrorCode,
  ErrorAnswer,
  Investigation,
  ReviewsAnswer,
  ReviewView,
  SessionAnswer,
} from '@oncegate/console-api';
import type { ToolContract } from '@oncegate/contracts';
import { InvalidExecutionsQueryError, type ExecutionsIndex } from '@oncegate/executions-index';
import { isExecutionId, type ExecutionId, type ReviewResolution } from '@oncegate/domain';
import type { EventStore } from '@oncegate/event-store';
import type { Clock } from '@oncegate/execution-journal';
import { decide, held, isApprovalRefusal, isReviewRefusal, pending, resolveReview, show, showReview, type ApprovalDecision } from '@oncegate/host-decisions';
import type { ApproverDirectory } from '@oncegate/host-principals';
import { gatherInvestigationEvents, investigate } from '@oncegate/projections';
import {
  CONSOLE_COOKIE,
  ConsoleSessions,
  CSRF_HEADER,
  csrfMatches,
  sessionCookieOf,
  type ConsoleSession,
  type ConsoleSessionLimits,
} from './console-sessions';
import { authenticateApprover } from './approvals-api';
import { executionsPage, INDEX_UNAVAILABLE } from './executions-api';
import type { OAuthResource } from './oauth-resource';

/** Where the console is mounted on the gateway's listener. */
export const CONSOLE_PATH = '/console';

/** A sign-in or decision body is a token or a reason of at most 1000 characters; anything near this size is not one. */
const MAX_BODY_BYTES = 16 * 1024;

/**
 * What the console's pages may do: scripts, styles and images from the gateway only (no inline script or
 * style), requests to the gateway only, no frames, no forms posted anywhere.
 */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.map': 'application/json',
};

const DECISIONS: Readonly<Record<string, ApprovalDecision>> = { approve: 'approve', deny: 'deny' };
const RESOLUTIONS: Readonly<Record<string, ReviewResolution>> = { completed: 'completed', not_executed: 'not_executed', abandoned: 'abandoned' };

export interface ConsoleApiOptions {
  readonly store: EventStore;
  /** Approver tokens: only approvers sign in to the console. */
  readonly approvers: ApproverDirectory;
  readonly tools: ReadonlyMap<string, ToolContract>;
  readonly clock: Clock;
  /** The built console (`dist/apps/console`): `index.html` and `assets/`. */
  readonly assetsDir: string;
  /** Default `DEFAULT_CONSOLE_SESSION_LIMITS`. */
  readonly sessionLimits?: ConsoleSessionLimits;
  /** Access tokens of the identity provider that mark an approver (`oauth.approver`); none by default. */
  readonly oauth?: OAuthResource;
  /** The executions index this process keeps current, for `GET /console/api/executions`; without it, 503. */
  readonly executions?: ExecutionsIndex;
}

class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly code: ConsoleErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
    readonly state?: string,
  ) {
    super(message);
  }
}

/**
 * The operator console on the gateway's listener under `/console`: the built pages (static files, no data in
 * them) and the JSON API they call under `/console/api`. An approver signs in with an approver token, which is
 * exchanged for an HttpOnly, SameSite=Strict session cookie; every decision also carries the session's
 * anti-forgery token in `x-oncegate-csrf`. Decisions go through the approval and review queues, exactly as the
 * CLI's do; this class only maps their refusals to status codes. The listener's Host and Origin rules run
 * before any of this.
 */
export class ConsoleApi {
  readonly prefix = CONSOLE_PATH;
  private readonly log = new Logger('console');
  private readonly sessions: ConsoleSessions;

  constructor(private readonly options: ConsoleApiOptions) {
    this.sessions = new ConsoleSessions(options.sessionLimits);
  }

  /** Answers one request under `/console`; never throws (every failure is a JSON error response). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const path = (req.url ?? '/').split('?')[0]!;
      const rest = path.slice(this.prefix.length);
      if (rest === '/api' || rest.startsWith('/api/')) return await this.api(req, res, rest.slice('/api'.length).split('/').filter((part) => part.length > 0));
      return this.page(req, res, rest);
    } catch (error) {
      const failure = this.errorOf(error);
      writeError(res, failure);
    }
  }

  /** The static files of the built console; none of them holds data. */
  private page(req: IncomingMessage, res: ServerResponse, rest: string): void {
    req.resume();
    if (req.method !== 'GET' && req.method !== 'HEAD') throw new ConsoleError(405, 'method_not_allowed', `method ${req.method} not allowed here; use GET`, { allow: 'GET' });
    if (rest === '') {
      res.writeHead(308, { location: `${this.prefix}/`, ...SECURITY_HEADERS });
      res.end();
      return;
    }
    const asset = /^\/assets\/([\w.-]+)$/.exec(rest)?.[1];
    const file = rest === '/' || rest === '/index.html' ? 'index.html' : asset !== undefined && this.assetNames().has(asset) ? join('assets', asset) : undefined;
    if (file === undefined) throw new ConsoleError(404, 'not_found', `no such page ${this.prefix}${rest}`);
    let body: Buffer;
    try {
      body = readFileSync(join(this.options.assetsDir, file));
    } catch {
      throw new ConsoleError(503, 'not_built', 'the console is not built: run npm run build');
    }
    res.writeHead(200, {
      'content-type': file === 'index.html' ? 'text/html; charset=utf-8' : (CONTENT_TYPES[extname(file)] ?? 'application/octet-stream'),
      // Asset names carry a content hash; the page itself is always fetched again.
      'cache-control': file === 'index.html' ? 'no-store' : 'public, max-age=31536000, immutable',
      ...SECURITY_HEADERS,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  }

  private assetNames(): Set<string> {
    try {
      return new Set(readdirSync(join(this.options.assetsDir, 'assets')));
    } catch {
      return new Set();
    }
  }

  private async api(req: IncomingMessage, res: ServerResponse, parts: string[]): Promise<void> {
    const [resource, id, action, ...extra] = parts;
    if (resource === 'session' && id === undefined) return this.sessionRequest(req, res);
    const { session } = await this.authenticated(req);
    const { store, tools, clock } = this.options;
    if (resource === 'approvals' && extra.length === 0) {
      if (id === undefined) {
        requireMethod(req, 'GET');
        const views = await Promise.all((await pending(store, clock)).map((item) => show(store, item.executionId, { tools, clock })));
        return writeJson(res, 200, { approvals: views } satisfies ApprovalsAnswer);
      }
      const executionId = executionIdOf(id);
      if (action === undefined) {
        requireMethod(req, 'GET');
        return writeJson(res, 200, (await show(store, executionId, { tools, clock })) satisfies ApprovalView);
      }
      const decision = DECISIONS[action];
      if (decision !== undefined) {
        const body = await this.decisionBody(req, session);
        const view = await decide(store, clock, executionId, decision, session.actor, stringField(body, 'reason'), tools);
        this.log.log(`${executionId}: approval ${view.approval.decision} by ${session.actor} (console)`);
        return writeJson(res, 200, view satisfies ApprovalView);
      }
    }
    if (resource === 'reviews' && extra.length === 0) {
      if (id === undefined) {
        requireMethod(req, 'GET');
        const views = await Promise.all((await held(store)).map((item) => showReview(store, item.executionId)));
        return writeJson(res, 200, { reviews: views } satisfies ReviewsAnswer);
      }
      const executionId = executionIdOf(id);
      if (action === undefined) {
        requireMethod(req, 'GET');
        return writeJson(res, 200, (await showReview(store, executionId)) satisfies ReviewView);
      }
      if (action === 'resolve') {
        const body = await this.decisionBody(req, session);
        const resolution = RESOLUTIONS[stringField(body, 'resolution')];
        if (resolution === undefined) throw new ConsoleError(400, 'invalid_reason', `resolution must be one of ${Object.keys(RESOLUTIONS).join(', ')}`);
        const resend = booleanField(body, 'resend');
        const view = await resolveReview(store, clock, executionId, resolution, session.actor, stringField(body, 'reason'), { resend });
        this.log.log(`${executionId}: review resolved as ${resolution}${resend ? ' with a resend' : ''} by ${session.actor} (console)`);
        return writeJson(res, 200, view satisfies ReviewView);
      }
    }
    if (resource === 'executions' && id === undefined) {
      requireMethod(req, 'GET');
      req.resume();
      if (this.options.executions === undefined) throw new ConsoleError(503, 'unavailable', INDEX_UNAVAILABLE);
      return writeJson(res, 200, (await executionsPage(this.options.executions, req.url, clock)) satisfies ExecutionsAnswer);
    }
    if (resource === 'executions' && id !== undefined && action === undefined) {
      requireMethod(req, 'GET');
      const subject = { executionId: executionIdOf(id) };
      const found = investigate(await gatherInvestigationEvents(store, subject), subject);
      if (!found.found) throw new ConsoleError(404, 'not_found', `nothing is recorded for ${id}`);
      return writeJson(res, 200, found satisfies Investigation);
    }
    req.resume();
    throw new ConsoleError(404, 'not_found', `no such resource ${this.prefix}/api/${parts.join('/')}`);
  }

  /** `POST` signs in with an approver token, `GET` tells the page who is signed in, `DELETE` signs out. */
  private async sessionRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'POST') {
      const body = await jsonBody(req);
      const given = (body as Record<string, unknown>)['token'];
      const token = typeof given === 'string' ? given.trim() : '';
      const approver = await authenticateApprover(token.length === 0 ? undefined : token, this.options.approvers, this.options.oauth, 'console');
      if (!('actor' in approver)) {
        throw approver.status >= 500 ? new ConsoleError(503, 'unavailable', approver.refused, { 'retry-after': '5' }) : new ConsoleError(401, 'unauthorized', approver.refused);
      }
      const { actor } = approver;
      const { id, session } = this.sessions.start(actor, token);
      this.log.log(`${actor} signed in to the console`);
      return writeJson(res, 200, sessionBody(session), { 'set-cookie': this.cookie(id) });
    }
    const { id, session } = await this.authenticated(req);
    if (req.method === 'GET') return writeJson(res, 200, sessionBody(session));
    if (req.method === 'DELETE') {
      requireCsrf(req, session);
      this.sessions.end(id);
      res.writeHead(204, { 'set-cookie': this.cookie('', 0), 'cache-control': 'no-store', ...SECURITY_HEADERS });
      res.end();
      return;
    }
    req.resume();
    throw new ConsoleError(405, 'method_not_allowed', `method ${req.method} not allowed here`, { allow: 'GET, POST, DELETE' });
  }

  /** The session the cookie names, its approver token still valid; otherwise 401 and nothing is read. */
  private async authenticated(req: IncomingMessage): Promise<{ id: string; session: ConsoleSession }> {
    const id = sessionCookieOf(req.headers.cookie);
    const session = this.sessions.find(id);
    const approver = session === undefined ? undefined : await authenticateApprover(session.approverToken, this.options.approvers, this.options.oauth, 'console');
    if (id !== undefined && session !== undefined && approver !== undefined && 'actor' in approver && approver.actor === session.actor) {
      return { id, session };
    }
    // The identity provider out of reach says nothing against the approver: the session stays, this request fails.
    if (approver !== undefined && 'refused' in approver && approver.status >= 500) {
      req.resume();
      throw new ConsoleError(503, 'unavailable', approver.refused, { 'retry-after': '5' });
    }
    this.sessions.end(id);
    req.resume();
    throw new ConsoleError(401, 'unauthorized', 'sign in with an approver token', { 'set-cookie': this.cookie('', 0) });
  }

  /** A decision: `POST`, the session's anti-forgery token, and a JSON body. */
  private async decisionBody(req: IncomingMessage, session: ConsoleSession): Promise<unknown> {
    requireMethod(req, 'POST');
    requireCsrf(req, session);
    return jsonBody(req);
  }

  private cookie(value: string, maxAgeSeconds = this.sessions.cookieMaxAgeSeconds()): string {
    return `${CONSOLE_COOKIE}=${value}; Path=${this.prefix}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}`;
  }

  /** The one place refusals and failures become status codes. */
  private errorOf(error: unknown): ConsoleError {
    if (error instanceof ConsoleError) return error;
    if (error instanceof InvalidExecutionsQueryError) return new ConsoleError(400, 'invalid_query', error.message);
    if (isApprovalRefusal(error)) {
      switch (error.kind) {
        case 'invalid_decision':
          return new ConsoleError(400, 'invalid_reason', error.message);
        case 'not_found':
          return new ConsoleError(404, 'not_found', error.message);
        case 'not_pending':
          return new ConsoleError(409, 'not_pending', error.message, {}, error.status);
        default: {
          const unhandled: never = error;
          return unhandled;
        }
      }
    }
    if (isReviewRefusal(error)) {
      switch (error.kind) {
        case 'invalid_resolution':
          return new ConsoleError(400, 'invalid_reason', error.message);
        case 'not_found':
          return new ConsoleError(404, 'not_found', error.message);
        case 'not_held':
          return new ConsoleError(409, 'not_held', error.message, {}, error.status);
        default: {
          const unhandled: never = error;
          return unhandled;
        }
      }
    }
    this.log.error(`request failed: ${(error as Error)?.message ?? error}`);
    return new ConsoleError(500, 'internal', 'internal error; load the page again before deciding');
  }
}

function sessionBody(session: ConsoleSession): SessionAnswer {
  return { actor: session.actor, csrfToken: session.csrfToken };
}

function requireMethod(req: IncomingMessage, method: 'GET' | 'POST'): void {
  if (req.method === method) return;
  req.resume();
  throw new ConsoleError(405, 'method_not_allowed', `method ${req.method} not allowed here; use ${method}`, { allow: method });
}

function requireCsrf(req: IncomingMessage, session: ConsoleSession): void {
  if (csrfMatches(session, req.headers[CSRF_HEADER])) return;
  req.resume();
  throw new ConsoleError(403, 'csrf_required', `a decision needs the session's ${CSRF_HEADER} header; load the console again`);
}

function executionIdOf(value: string): ExecutionId {
  if (!isExecutionId(value)) {
    throw new ConsoleError(400, 'invalid_execution_id', `'${value.slice(0, 64)}' is not an execution id (ex_ followed by a ULID)`);
  }
  return value;
}

/** A JSON object body; a form post from another site (not `application/json`) is refused unread. */
async function jsonBody(req: IncomingMessage): Promise<unknown> {
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) {
    req.resume();
    throw new ConsoleError(415, 'unsupported_media_type', 'send application/json');
  }
  const declared = Number(req.headers['content-length'] ?? NaN);
  const tooLarge = () => new ConsoleError(413, 'too_large', `the request body exceeds ${MAX_BODY_BYTES} bytes; nothing was recorded`, { connection: 'close' });
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) throw tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw tooLarge();
    chunks.push(chunk as Buffer);
  }
  try {
    const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed;
  } catch {
    // reported below
  }
  throw new ConsoleError(400, 'invalid_json', 'the body is not a JSON object');
}

function stringField(body: unknown, field: string): string {
  const value = (body as Record<string, unknown>)[field];
  if (typeof value !== 'string') throw new ConsoleError(400, 'invalid_reason', `a ${field} is required: send {"${field}": "..."}`);
  return value;
}

/** An optional boolean field: absent is false; anything but a boolean is refused. */
function booleanField(body: unknown, field: string): boolean {
  const value = (body as Record<string, unknown>)[field];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new ConsoleError(400, 'invalid_reason', `${field} must be true or false when given`);
  return value;
}

function writeJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...SECURITY_HEADERS, ...headers });
  res.end(JSON.stringify(body));
}

function writeError(res: ServerResponse, error: ConsoleError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: ErrorAnswer<ConsoleErrorCode> = { error: { code: error.code, message: error.message, ...(error.state === undefined ? {} : { state: error.state }) } };
  writeJson(res, error.status, body, error.headers);
}
