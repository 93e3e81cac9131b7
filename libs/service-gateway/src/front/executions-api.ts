import type { IncomingMessage, ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import type { ErrorAnswer, ExecutionsAnswer, ExecutionsApiErrorCode } from '@oncegate/console-api';
import type { Clock } from '@oncegate/execution-journal';
import { InvalidExecutionsQueryError, parseExecutionsQuery, type ExecutionsIndex, type QueryParameters } from '@oncegate/executions-index';
import type { ApproverDirectory } from '@oncegate/host-principals';
import { approverOfRequest, writeApiJson } from './approvals-api';
import type { OAuthResource } from './oauth-resource';

/** Where the API is mounted on the gateway's listener. */
export const EXECUTIONS_PATH = '/executions';

export interface ExecutionsApiOptions {
  /** The index this process keeps current; `undefined` when it could not be opened (every search answers 503). */
  readonly index: ExecutionsIndex | undefined;
  /** Approver tokens; agent tokens are not in it, so an agent never searches other agents' calls. */
  readonly approvers: ApproverDirectory;
  readonly clock: Clock;
  readonly oauth?: OAuthResource;
}

/** The URL's query parameters, each name with all its values (`?state=a&state=b` and `?state=a,b` alike). */
export function queryParametersOf(url: string | undefined): QueryParameters {
  const search = new URL(url ?? '/', 'http://gateway').searchParams;
  const parameters: Record<string, string[]> = {};
  for (const [name, value] of search) (parameters[name] ??= []).push(value);
  return parameters;
}

/** A page of the index for a request's query; a filter it cannot answer throws `InvalidExecutionsQueryError`. */
export async function executionsPage(index: ExecutionsIndex, url: string | undefined, clock: Clock): Promise<ExecutionsAnswer> {
  const query = parseExecutionsQuery(queryParametersOf(url), clock.now().getTime());
  return (await index.page(query)) satisfies ExecutionsAnswer;
}

/** What a search answers when this process could not open the index (its log said why, at start). */
export const INDEX_UNAVAILABLE = "the executions index could not be opened at the gateway's start (its log says why); search again after fixing it, or use oncegate executions list";

class ExecutionsApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ExecutionsApiErrorCode,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/**
 * `GET /executions?tool=…&actor=…&class=…&state=…&run=…&channel=…&host=…&since=…&until=…&limit=…&cursor=…`: the
 * executions index for people with an approver token (the same people who see every pending approval), newest
 * first, with the next page's cursor and how far behind the journal the index is. Read only.
 */
export class ExecutionsApi {
  readonly prefix = EXECUTIONS_PATH;
  private readonly log = new Logger('executions-api');

  constructor(private readonly options: ExecutionsApiOptions) {}

  /** Answers one request under `/executions`; never throws (every failure is a JSON error response). */
  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      await this.authenticate(req);
      req.resume();
      const path = (req.url ?? '/').split('?')[0]!;
      if (path !== this.prefix && path !== `${this.prefix}/`) {
        throw new ExecutionsApiError(404, 'not_found', `no such resource ${path.slice(0, 128)}; search with GET ${this.prefix}?state=…, one execution with oncegate investigate <id>`);
      }
      if (req.method !== 'GET') throw new ExecutionsApiError(405, 'method_not_allowed', `method ${req.method} not allowed here; use GET`, { allow: 'GET' });
      const { index } = this.options;
      if (index === undefined) throw new ExecutionsApiError(503, 'unavailable', INDEX_UNAVAILABLE);
      writeApiJson(res, 200, await executionsPage(index, req.url, this.options.clock));
    } catch (error) {
      const failure = this.errorOf(error);
      writeError(res, failure);
    }
  }

  private async authenticate(req: IncomingMessage): Promise<string> {
    const approver = await approverOfRequest(req, this.options.approvers, this.options.oauth, 'oncegate-executions');
    if ('actor' in approver) return approver.actor;
    throw new ExecutionsApiError(approver.status, approver.code, approver.message, approver.headers);
  }

  /** The one place failures become status codes. */
  private errorOf(error: unknown): ExecutionsApiError {
    if (error instanceof ExecutionsApiError) return error;
    if (error instanceof InvalidExecutionsQueryError) return new ExecutionsApiError(400, 'invalid_query', error.message);
    this.log.error(`request failed: ${(error as Error)?.message ?? error}`);
    return new ExecutionsApiError(500, 'internal', 'internal error; try the search again');
  }
}

function writeError(res: ServerResponse, error: ExecutionsApiError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body: ErrorAnswer<ExecutionsApiErrorCode> = { error: { code: error.code, message: error.message } };
  writeApiJson(res, error.status, body, error.headers);
}
