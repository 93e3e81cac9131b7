import { readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, join } from 'node:path';
import { Logger } from '@nestjs/common';
import type {
  ExecutionsAnswer,
  ApprovalsAnswer,
  ApprovalView,
  ConsoleErrorCode,
  DecisionEntry,
  DecisionFilter,
  DecisionsAnswer,
  ErrorAnswer,
  Investigation,
  QueueCountsAnswer,
  ReviewsAnswer,
  ReviewView,
  SessionAnswer,
} from '@oncegate/console-api';
import type { ToolContract } from '@oncegate/contracts';
import { InvalidExecutionsQueryError, type ExecutionsIndex } from '@oncegate/executions-index';
import { isExecutionId, type ApprovalDecidedData, type ExecutionId, type ReviewResolution, type ReviewResolvedData } from '@oncegate/domain';
import type { EventStore, RecordedEvent } from '@oncegate/event-store';
import { loadExecution, type Clock } from '@oncegate/execution-journal';
import {
  decide,
  held,
  isApprovalRefusal,
  isReviewRefusal,
  pending,
  resolveReview,
  reviewViewOf,
  show,
  showReview,
  targetOf,
  type ApprovalDecision,
} from '@oncegate/host-decisions';
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
import { readBodyWithin } from './request-body';

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
        const views = await Promise.all((await held(store)).map(async (item) => this.withTarget(await showReview(store, item.executionId))));
        return writeJson(res, 200, { reviews: views } satisfies ReviewsAnswer);
      }
      const executionId = executionIdOf(id);
      if (action === undefined) {
        requireMethod(req, 'GET');
        return writeJson(res, 200, this.withTarget(await showReview(store, executionId)) satisfies ReviewView);
      }
      if (action === 'resolve') {
        const body = await this.decisionBody(req, session);
        const resolution = RESOLUTIONS[stringField(body, 'resolution')];
        if (resolution === undefined) throw new ConsoleError(400, 'invalid_reason', `resolution must be one of ${Object.keys(RESOLUTIONS).join(', ')}`);
        const resend = booleanField(body, 'resend');
        const view = await resolveReview(store, clock, executionId, resolution, session.actor, stringField(body, 'reason'), { resend });
        this.log.log(`${executionId}: review resolved as ${resolution}${resend ? ' with a resend' : ''} by ${session.actor} (console)`);
        return writeJson(res, 200, this.withTarget(view) satisfies ReviewView);
      }
    }
    if (resource === 'decisions' && id === undefined) return this.decisionsRequest(req, res);
    if (resource === 'counts' && id === undefined) return this.countsRequest(req, res);
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
    if (req.method === 'GET') return this.sessionAsked(req, res);
    const { id, session } = await this.authenticated(req);
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

  /**
   * Who is signed in: 204 without a live session rather than 401, because the sign-in page asks on every load and a
   * browser logs every 4xx as an error in its console; the decisions and reads still answer 401.
   */
  private async sessionAsked(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const { session } = await this.authenticated(req);
      return writeJson(res, 200, sessionBody(session));
    } catch (error) {
      if (!(error instanceof ConsoleError) || error.status !== 401) throw error;
      res.writeHead(204, { 'cache-control': 'no-store', ...SECURITY_HEADERS, ...error.headers });
      res.end();
    }
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

  /** The review as the console shows it: with the target its tool's contract renders. */
  private withTarget(view: Omit<ReviewView, 'target'>): ReviewView {
    return { ...view, target: targetOf(view.record, this.options.tools.get(view.tool)) };
  }

  /** `GET /console/api/counts`: how many requests wait for an approval and how many executions for an operator. */
  private async countsRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requireMethod(req, 'GET');
    const { store, clock } = this.options;
    const [approvals, reviews] = await Promise.all([pending(store, clock), held(store)]);
    return writeJson(res, 200, { approvals: approvals.length, reviews: reviews.length, countedAt: clock.now().toISOString() } satisfies QueueCountsAnswer);
  }

  /**
   * `GET /console/api/decisions?…`: the decision history, newest first. It reads the journal's decision events
   * backwards with the store's event-type filter, at most {@link DECISIONS_SCANNED_PER_REQUEST} of them per request,
   * and answers a cursor to continue from; each match is completed from its execution's stream (tool, agent, and
   * the state it is in now).
   */
  private async decisionsRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    requireMethod(req, 'GET');
    const query = decisionsQueryOf(new URL(req.url ?? '/', 'http://console.invalid').searchParams);
    const { store } = this.options;
    const decisions: DecisionEntry[] = [];
    const executions = new Map<ExecutionId, Promise<Omit<ReviewView, 'target'> | undefined>>();
    const executionOf = (executionId: ExecutionId) => {
      let found = executions.get(executionId);
      if (found === undefined) {
        found = loadExecution(store, executionId).then((loaded) => (loaded.state.accepted === null ? undefined : reviewViewOf(loaded)));
        executions.set(executionId, found);
      }
      return found;
    };
    let before = query.before;
    let scanned = 0;
    let exhausted = false;
    while (decisions.length < query.limit && scanned < DECISIONS_SCANNED_PER_REQUEST && !exhausted) {
      const page = await store.readAll({
        direction: 'backwards',
        ...(before === undefined ? {} : { before }),
        maxCount: Math.min(DECISIONS_PAGE, DECISIONS_SCANNED_PER_REQUEST - scanned),
        filter: { streamPrefixes: ['execution-'], eventTypes: DECISION_EVENT_TYPES },
      });
      if (page.events.length === 0) {
        exhausted = true;
        break;
      }
      for (const event of page.events) {
        scanned += 1;
        before = event.position;
        const decided = decisionOf(event);
        if (decided === undefined) continue;
        // Decisions are appended when they are made, so the first one older than `from` ends the search.
        if (query.from !== undefined && decided.at < query.from) {
          exhausted = true;
          break;
        }
        if (!decided.matches(query)) continue;
        const view = await executionOf(decided.executionId);
        if (view === undefined || !includesFolded(view.tool, query.tool)) continue;
        decisions.push({
          position: event.position,
          executionId: decided.executionId,
          kind: decided.kind,
          decision: decided.decision,
          resend: decided.resend,
          by: decided.by,
          reason: decided.reason,
          at: decided.at,
          tool: view.tool,
          actor: view.actor,
          operationClass: view.operationClass,
          followed: {
            state: view.state,
            attempts: view.attempts,
            targetStatus: view.targetStatus,
            exitCode: view.exitCode,
            errorAnswer: view.errorAnswer,
            denialBasis: view.denialBasis,
            reviewReason: view.reviewReason,
          },
        });
        if (decisions.length === query.limit) break;
      }
    }
    const next = exhausted || before === undefined || before <= 1 ? null : before;
    return writeJson(res, 200, { decisions, next, scanned } satisfies DecisionsAnswer);
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
  const body = await readBodyWithin(req, MAX_BODY_BYTES, () =>
    new ConsoleError(413, 'too_large', `the request body exceeds ${MAX_BODY_BYTES} bytes; nothing was recorded`, { connection: 'close' }),
  );
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
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

// ---------------------------------------------------------------------------------------------------------------
// The decision history and the review's target.

/** At most this many decision events are read for one request, so a search that matches little stays bounded. */
const DECISIONS_SCANNED_PER_REQUEST = 2000;
const DECISIONS_PAGE = 500;
const MAX_DECISIONS_LIMIT = 100;
const DECISION_EVENT_TYPES = ['ApprovalGranted', 'ApprovalDenied', 'ReviewResolved'];
const DECISION_FILTERS: readonly DecisionFilter[] = ['granted', 'denied', 'completed', 'not_executed', 'abandoned', 'resend'];

interface DecisionsSearch {
  readonly by?: string;
  readonly tool?: string;
  readonly decisions?: ReadonlySet<DecisionFilter>;
  readonly text?: string;
  readonly execution?: string;
  readonly from?: string;
  readonly to?: string;
  readonly before?: number;
  readonly limit: number;
}

/** The search's parameters, each checked: a parameter that cannot be read is refused, never ignored. */
function decisionsQueryOf(params: URLSearchParams): DecisionsSearch {
  const known = new Set(['by', 'tool', 'decision', 'text', 'execution', 'from', 'to', 'before', 'limit']);
  for (const name of params.keys()) {
    if (!known.has(name)) throw new ConsoleError(400, 'invalid_query', `unknown parameter '${name.slice(0, 40)}'; use ${[...known].join(', ')}`);
  }
  const text = (name: string) => {
    const value = params.get(name)?.trim();
    if (value === undefined || value === '') return undefined;
    if (value.length > 200) throw new ConsoleError(400, 'invalid_query', `${name} is longer than 200 characters`);
    return value.toLowerCase();
  };
  const instant = (name: string) => {
    const value = params.get(name)?.trim();
    if (value === undefined || value === '') return undefined;
    const time = Date.parse(value);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(time)) throw new ConsoleError(400, 'invalid_query', `${name} must be an ISO-8601 instant such as 2026-12-04T15:02:11Z`);
    return new Date(time).toISOString();
  };
  const count = (name: string, min: number, max: number) => {
    const value = params.get(name)?.trim();
    if (value === undefined || value === '') return undefined;
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > max) throw new ConsoleError(400, 'invalid_query', `${name} must be a whole number from ${min} to ${max}`);
    return parsed;
  };
  const decisionText = text('decision');
  let decisions: Set<DecisionFilter> | undefined;
  if (decisionText !== undefined) {
    decisions = new Set();
    for (const part of decisionText.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
      const found = DECISION_FILTERS.find((filter) => filter === part);
      if (found === undefined) throw new ConsoleError(400, 'invalid_query', `decision must be one or more of ${DECISION_FILTERS.join(', ')}`);
      decisions.add(found);
    }
  }
  const execution = params.get('execution')?.trim();
  if (execution !== undefined && execution !== '') executionIdOf(execution);
  const search = {
    by: text('by'),
    tool: text('tool'),
    decisions,
    text: text('text'),
    execution: execution === '' ? undefined : execution,
    from: instant('from'),
    to: instant('to'),
    before: count('before', 1, Number.MAX_SAFE_INTEGER),
    limit: count('limit', 1, MAX_DECISIONS_LIMIT) ?? 50,
  };
  return Object.fromEntries(Object.entries(search).filter(([, value]) => value !== undefined)) as unknown as DecisionsSearch;
}

interface RecordedDecision {
  readonly executionId: ExecutionId;
  readonly kind: DecisionEntry['kind'];
  readonly decision: DecisionEntry['decision'];
  readonly resend: boolean;
  readonly by: string;
  readonly reason: string;
  readonly at: string;
  /** Whether the search takes it, on what the event itself says (the tool is checked once the execution is read). */
  matches(search: DecisionsSearch): boolean;
}

function decisionOf(event: RecordedEvent): RecordedDecision | undefined {
  const executionId = event.streamId.slice('execution-'.length);
  if (!isExecutionId(executionId)) return undefined;
  let facts: Omit<RecordedDecision, 'matches' | 'executionId'>;
  if (event.type === 'ApprovalGranted' || event.type === 'ApprovalDenied') {
    const data = event.data as ApprovalDecidedData;
    facts = { kind: 'approval', decision: event.type === 'ApprovalGranted' ? 'granted' : 'denied', resend: false, by: data.by, reason: data.reason, at: data.decidedAt };
  } else if (event.type === 'ReviewResolved') {
    const data = event.data as ReviewResolvedData;
    facts = { kind: 'review', decision: data.resolution, resend: data.resend === true, by: data.by, reason: data.reason, at: data.resolvedAt };
  } else {
    return undefined;
  }
  return {
    ...facts,
    executionId,
    matches: (search) =>
      (search.execution === undefined || search.execution === executionId) &&
      (search.decisions === undefined || search.decisions.has(facts.decision) || (facts.resend && search.decisions.has('resend'))) &&
      includesFolded(facts.by, search.by) &&
      includesFolded(facts.reason, search.text) &&
      (search.to === undefined || facts.at <= search.to) &&
      (search.from === undefined || facts.at >= search.from),
  };
}

/** Whether `value` holds `part`, ignoring case (`part` is already lower case); no part takes everything. */
function includesFolded(value: string, part: string | undefined): boolean {
  return part === undefined || value.toLowerCase().includes(part);
}

