import { randomUUID } from 'node:crypto';
import { Client, ProtocolError, SdkError, SdkErrorCode, SdkHttpError, StreamableHTTPClientTransport, type CallToolResult, type Tool } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  createTaskSessionEndpointId,
  createTaskSessionFromClient,
  JsonRpcResponseError,
  toolDeclarationFromMcpTool,
  type SerializedTaskReference,
  type TaskEnabledSession,
  type TaskOutcome,
  type ToolExecution,
} from '@modelcontextprotocol/ext-tasks/client';
import { hideSecrets, type ChannelLog, type ResumedTask, type SendOutcome } from '@oncegate/dispatcher-kit';
import { transportKey, type UpstreamTransport } from './mcp-section';

/*
 * One upstream MCP server as a dispatcher process holds it: one client, opened at first use and opened again after a
 * failure; its tools as the upstream lists them now (read again when it says they changed, and on every new
 * connection); for a stdio upstream, the child process the channel runs and supervises.
 */

/** The `_meta` keys an attempt carries, so that an upstream that cares can recognise a call sent again. */
export const EXECUTION_ID_META = 'io.oncegate/execution-id';
export const ATTEMPT_META = 'io.oncegate/attempt';

/** The tasks extension of 2026-07-28, as an upstream declares it among its capabilities' extensions. */
const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The revision whose task requests the channel frames itself. */
const MODERN_REVISION = '2026-07-28';
/** How the channel names itself to an upstream. */
const CLIENT_INFO = { name: 'oncegate-mcp-channel', version: '0.1.0' };
/** The longest a connection may take to open when no attempt waits for it (a stdio child restarted in the background). */
const OPEN_TIMEOUT_MS = 30_000;
/** Why a listing is read again after the upstream's `notifications/tools/list_changed`. */
export const LIST_CHANGED = 'it said its tools changed';

/** A stdio child that exits is started again after this pause, doubled after each quick exit up to the longest. */
const FIRST_PAUSE_MS = 250;
const LONGEST_PAUSE_MS = 30_000;
/** A child that ran this long before it exited was not crash-looping: its next start waits the first pause again. */
const STABLE_MS = 10_000;
/** Once the connection that carried an attempt broke, how long a result already on its way may still settle it. */
const SETTLE_GRACE_MS = 50;
/** Errors of a connection that was never made: nothing of the request can have reached the upstream. */
const NEVER_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);
/** The last lines a stdio child wrote to stderr, kept to say why it exited. */
const STDERR_LINES = 5;

/** What a call needs of the session: its deadlines, and the credential of a url upstream. */
export interface CallContext {
  readonly executionId: string;
  readonly attempt: number;
  readonly connectTimeoutMs: number;
  readonly responseTimeoutMs: number;
  /** The attempt's credential (a url upstream's bearer), wiped by the kit once the attempt resolves. */
  readonly secret?: Buffer;
  /** Where the upstream's progress notifications for this call go (the kit records them and tells the agent). */
  readonly progress?: (report: { progress: number; total?: number; message?: string }) => void;
  /** Journals the reference of the task the upstream runs the call as, before its outcome is waited for. */
  readonly recordTask?: (task: Readonly<Record<string, unknown>>) => Promise<boolean>;
}

/** What resuming a task gave when it gave no answer: why, in the kit's words. */
export type TaskUnsettled = Extract<ResumedTask, { kind: 'unsettled' }>;

/** A call that did not leave: why, in words an agent and an operator can act on. */
export class NotSent extends Error {
  override readonly name = 'NotSent';
}

/** One open connection to the upstream and what it knows of the upstream's tools. */
interface Connection {
  readonly client: Client;
  readonly openedAt: number;
  /** The upstream's tools by name, as its last tools/list said. */
  tools: ReadonlyMap<string, Tool>;
  /** Set when the upstream said its tools changed: the next call reads tools/list again first. */
  stale: boolean;
  /** Cleared when the connection closed or failed: the next call opens another. */
  alive: boolean;
  /** The refresh of the tools in flight, which calls wait for. */
  refreshing: Promise<void> | undefined;
  /** How the connection reads in a log line: the negotiated revision (and the child's pid). */
  readonly described: string;
  /** Calls in flight on it: a connection given up is closed once they are done, not under them. */
  calls: number;
  /** Its tasks session (ext-tasks), opened at the first task: `null` when the upstream offers no tasks it can use. */
  tasks: TaskEnabledSession | null | undefined;
  /** Task executions driven on it now: released (never cancelled) before the connection closes. */
  readonly taskExecutions: Set<ToolExecution<unknown>>;
}

/** The HTTP requests of one attempt, as the session's fetch sees them. */
interface AttemptWatch {
  readonly secret: Buffer | undefined;
  /** Resolves when the connection carrying the attempt's request broke. */
  readonly broken: Promise<void>;
  break(): void;
}

/** What the upstream answered: its result, or an error answer. */
export type UpstreamAnswer = { readonly kind: 'result'; readonly result: CallToolResult } | { readonly kind: 'error_answer'; readonly message: string };

/** Answers of one tools/call as the channel records them. */
export type CallAnswer = UpstreamAnswer | Exclude<SendOutcome, { kind: 'observed' }>;

export class UpstreamSession {
  private connection: Connection | undefined;
  private opening: Promise<Connection> | undefined;
  /** A url upstream's credential as the last attempt gave it: the connection's own requests (initialize, tools/list) carry it. */
  private secret: Buffer | undefined;
  private readonly watches = new Map<string, AttemptWatch>();
  /** A url upstream's notification stream (2025-11-25: the GET stream) is open. */
  private getStreamOpen = false;
  private restart: { readonly timer: NodeJS.Timeout } | undefined;
  private pauseMs = FIRST_PAUSE_MS;
  private closed = false;
  /** Tool definitions in use by calls, for the log of each refresh: what changed, what is held. */
  readonly onRefresh: Array<(tools: ReadonlyMap<string, Tool>, why: string, changes: ToolChanges | undefined) => void> = [];
  /** The id ext-tasks scopes this upstream's task references by, the same in every process (from its name and where it is). */
  private endpointId: Promise<string> | undefined;
  /** The tools as the upstream last listed them, on any connection: what a new listing is compared with. */
  private lastListed: ReadonlyMap<string, Tool> | undefined;

  /** The channel's log, with the credential hidden in every line: an upstream's error text may quote what it was sent. */
  private readonly log: ChannelLog;

  constructor(
    readonly name: string,
    readonly transport: UpstreamTransport,
    log: ChannelLog,
  ) {
    const hidden = (text: string) => (this.secret === undefined ? text : hideSecrets(text, [this.secret.toString('utf8')]));
    this.log = { log: (text) => log.log(hidden(text)), warn: (text) => log.warn(hidden(text)), error: (text) => log.error(hidden(text)) };
  }

  /** Where the upstream is, for messages: its url, or the command it is started with (never its environment's values). */
  get where(): string {
    return this.transport.kind === 'http' ? this.transport.url : transportKey(this.transport);
  }

  /**
   * The upstream's current definition of `tool` (`undefined` when it lists none by that name), on a connection ready
   * for a call: opened if there was none, its tools read again if they changed or if the upstream cannot say so.
   *
   * @throws NotSent when no connection could be opened (or its tools read) in time: nothing was sent
   */
  async definitionOf(tool: string, context: CallContext): Promise<Tool | undefined> {
    const connection = await this.ready(context);
    return connection.tools.get(tool);
  }

  /** Sends one tools/call on the connection `definitionOf` made ready, and says what came of it. */
  async call(tool: Tool, args: Readonly<Record<string, unknown>>, context: CallContext): Promise<CallAnswer> {
    const connection = this.connection;
    if (connection === undefined || !connection.alive) return { kind: 'not_sent', reason: `the connection to upstream ${this.name} (${this.where}) closed before the call was written` };
    const watch = this.watch(context);
    connection.calls += 1;
    try {
      const call = connection.client
        .callTool(
          { name: tool.name, arguments: { ...args }, _meta: { [EXECUTION_ID_META]: context.executionId, [ATTEMPT_META]: context.attempt } },
          // The live definition without its output schema: the answer is recorded as the upstream gave it (the effect
          // happened whatever it holds), and a 2026-07-28 upstream still gets the headers its input schema declares.
          {
            timeout: context.responseTimeoutMs,
            maxTotalTimeout: context.responseTimeoutMs,
            toolDefinition: { ...tool, outputSchema: undefined },
            // Asking for progress gives the call a progress token; what the upstream reports reaches the agent.
            ...(context.progress === undefined ? {} : { onprogress: context.progress }),
          },
        )
        .then((result): CallAnswer => ({ kind: 'result', result }), (error: unknown) => this.answerOf(error, connection));
      return await Promise.race([call, brokenAnswer(watch)]);
    } finally {
      this.watches.delete(context.executionId);
      this.leave(connection);
    }
  }

  /**
   * How calls of `tool` go on the connection `definitionOf` made ready: as a task when the upstream offers tasks the
   * channel can use (2025-11-25: task-augmented tools/call, for a tool that allows a task; 2026-07-28 over HTTP: the
   * tasks extension, for any tool), else as a plain call; a tool that runs only as a task where none can be used is
   * refused.
   */
  taskMode(tool: Tool): 'task' | 'plain' | { readonly refused: string } {
    const support = (tool as { execution?: { taskSupport?: string } }).execution?.taskSupport;
    const connection = this.connection;
    // On 2026-07-28 an upstream with the tasks extension may answer any call with a task: every call goes so, unless
    // the tool forbids it.
    if (connection !== undefined && connection.client.getProtocolEra() === 'modern' && this.tasksOffered(connection)) return support === 'forbidden' ? 'plain' : 'task';
    if (support !== 'optional' && support !== 'required') return 'plain';
    if (connection !== undefined && this.tasksOffered(connection)) return 'task';
    return support === 'required'
      ? { refused: `tool ${tool.name} of upstream ${this.name} runs only as a task, and this connection (${connection?.described ?? 'none'}) offers none the channel can use: nothing was sent` }
      : 'plain';
  }

  /**
   * Whether the connection can carry tasks: on 2025-11-25 the upstream declares task-augmented tools/call; on
   * 2026-07-28 it declares the tasks extension and is reached over HTTP, where the channel frames task requests itself
   * (the SDK's client cannot carry them: `rawDispatch`).
   */
  private tasksOffered(connection: Connection): boolean {
    const client = connection.client;
    const capabilities = client.getServerCapabilities();
    if (client.getProtocolEra() !== 'modern') return capabilities?.tasks?.requests?.tools?.call !== undefined;
    const extension: unknown = capabilities?.extensions?.[TASKS_EXTENSION];
    return this.transport.kind === 'http' && typeof extension === 'object' && extension !== null && !Array.isArray(extension);
  }

  /** The connection's tasks session, opened at first use; `null` when the upstream offers no tasks the channel can use. */
  private async taskSessionOf(connection: Connection): Promise<TaskEnabledSession | null> {
    if (connection.tasks !== undefined) return connection.tasks;
    if (!this.tasksOffered(connection)) return (connection.tasks = null);
    // References are scoped to the upstream as the contract names it, so any instance of the channel can resume them.
    this.endpointId ??= createTaskSessionEndpointId('oncegate-mcp', { upstream: this.name, where: transportKey(this.transport) });
    const endpointId = await this.endpointId;
    // Another call may have opened it meanwhile: one adapter per client.
    if (connection.tasks !== undefined) return connection.tasks;
    const onError = (error: Error) => this.log.warn(`upstream ${this.name}: tasks: ${error.message}`);
    const modern =
      connection.client.getProtocolEra() === 'modern'
        ? {
            rawDispatch: (request: unknown, options?: { signal?: AbortSignal }) => this.dispatchModern(request, options?.signal),
            v2RequestFraming: { protocolVersion: connection.client.getNegotiatedProtocolVersion() ?? MODERN_REVISION, clientInfo: CLIENT_INFO, clientCapabilities: {} },
          }
        : {};
    const session = createTaskSessionFromClient(connection.client, { endpointId, onError, ...modern } as Parameters<typeof createTaskSessionFromClient>[1]) as TaskEnabledSession;
    connection.tasks = session;
    return session;
  }

  /**
   * One 2026-07-28 request the channel frames itself (a task-augmented tools/call, tasks/get, tasks/cancel): POSTed to
   * the upstream's url with the headers the revision asks for, through the session's fetch (the credential, the
   * watch of the attempt's connection), and its answer taken from the JSON or the event stream that carries it.
   */
  private async dispatchModern(request: unknown, signal: AbortSignal | undefined): Promise<{ kind: 'result'; result: never } | { kind: 'error'; error: never }> {
    if (this.transport.kind !== 'http') throw new Error('a 2026-07-28 task request needs an HTTP upstream');
    const message = { jsonrpc: '2.0', id: `oncegate-${randomUUID()}`, ...(request as Record<string, unknown>) } as unknown as { id: string; method: string; params?: { name?: unknown; taskId?: unknown } };
    const name = message.params?.taskId ?? message.params?.name;
    const response = await this.fetch(this.transport.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_REVISION,
        'mcp-method': message.method,
        ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify(message),
      ...(signal === undefined ? {} : { signal }),
    });
    const text = await response.text();
    const streamed = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    let bodies: Array<Record<string, unknown>>;
    try {
      bodies = streamed
        ? text.split('\n').filter((line) => line.startsWith('data:')).map((line) => JSON.parse(line.slice(5)) as Record<string, unknown>)
        : [JSON.parse(text) as Record<string, unknown>];
    } catch {
      bodies = [];
    }
    const answer = bodies.find((body) => body['id'] === message.id);
    // No JSON-RPC answer: the HTTP status says what happened (a 4xx: refused before any tool ran), as the SDK would.
    if (answer === undefined) throw new SdkHttpError(SdkErrorCode.ClientHttpUnexpectedContent, `upstream ${this.name} gave no answer to ${message.method} (HTTP ${response.status})`, { status: response.status });
    return 'error' in answer ? { kind: 'error', error: answer['error'] as never } : { kind: 'result', result: answer['result'] as never };
  }

  /**
   * Sends one tools/call as a task: the upstream's task reference is journaled as soon as it answers with it, then the
   * task is followed to its outcome within the response timeout. A lost connection or a timeout after the reference
   * was journaled is an unknown outcome that recovery resolves by resuming the task (`resumeTask`).
   */
  async callAsTask(tool: Tool, args: Readonly<Record<string, unknown>>, context: CallContext): Promise<CallAnswer> {
    const connection = this.connection;
    if (connection === undefined || !connection.alive) return { kind: 'not_sent', reason: `the connection to upstream ${this.name} (${this.where}) closed before the call was written` };
    const session = await this.taskSessionOf(connection);
    if (session === null) return { kind: 'not_sent', reason: `upstream ${this.name} no longer offers tasks on this connection: nothing was sent` };
    const watch = this.watch(context);
    const deadline = AbortSignal.timeout(context.responseTimeoutMs);
    connection.calls += 1;
    let execution: ToolExecution<unknown> | undefined;
    try {
      const started = session
        .callTool(tool.name, { ...args } as never, {
          declaration: toolDeclarationFromMcpTool(tool),
          task: { preference: 'prefer' },
          metadata: { [EXECUTION_ID_META]: context.executionId, [ATTEMPT_META]: context.attempt },
          requestTimeoutMs: context.responseTimeoutMs,
          signal: deadline,
        })
        .then(
          (made) => ({ made }),
          (error: unknown) => ({ answer: this.taskErrorAnswer(error, connection, deadline) }),
        );
      const first = await Promise.race([started, brokenAnswer(watch).then((answer) => ({ answer }))]);
      if ('answer' in first) {
        // The call may still be answered with a task: released, never cancelled, so that the upstream finishes it.
        void started.then((late) => ('made' in late ? late.made.detach() : undefined)).catch(() => undefined);
        return first.answer;
      }
      execution = first.made;
      connection.taskExecutions.add(execution);
      const taskId = execution.kind === 'task' ? String(execution.handle.taskId) : undefined;
      if (execution.kind === 'task') {
        const recorded = (await context.recordTask?.(execution.serializeReference() as unknown as Record<string, unknown>)) ?? false;
        if (!recorded) this.log.warn(`${context.executionId}: task ${taskId} of upstream ${this.name} was not journaled; should its outcome be lost, its class decides`);
      }
      const { outcome } = await execution.settle({ signal: deadline });
      return answerOfTask(outcome, taskId);
    } catch (error) {
      if (execution !== undefined) await execution.detach().catch(() => undefined);
      return deadline.aborted ? { kind: 'unknown', reason: 'timeout_after_send' } : this.taskErrorAnswer(error, connection, deadline);
    } finally {
      if (execution !== undefined) connection.taskExecutions.delete(execution);
      this.watches.delete(context.executionId);
      this.leave(connection);
    }
  }

  /**
   * Asks the upstream for the outcome of a task an earlier attempt journaled, waiting at most the response timeout: its
   * answer, or why there is none (still working, unknown to the upstream, or the upstream unreachable).
   */
  async resumeTask(reference: Readonly<Record<string, unknown>>, context: CallContext): Promise<UpstreamAnswer | TaskUnsettled> {
    const deadline = AbortSignal.timeout(context.responseTimeoutMs);
    let resumed = await this.resumeOnce(reference, context, deadline);
    // Asking for a task sends nothing: a connection that turned out stale (the upstream restarted) is given up and the
    // question asked once more on a new one.
    if (resumed.kind === 'unsettled' && resumed.finding === 'unreachable' && !deadline.aborted) resumed = await this.resumeOnce(reference, context, deadline);
    return resumed;
  }

  private async resumeOnce(reference: Readonly<Record<string, unknown>>, context: CallContext, deadline: AbortSignal): Promise<UpstreamAnswer | TaskUnsettled> {
    const taskId = String(reference['taskId'] ?? '?');
    let connection: Connection;
    try {
      connection = await this.ready(context);
    } catch (error) {
      return { kind: 'unsettled', finding: 'unreachable', reason: (error as Error).message };
    }
    const session = await this.taskSessionOf(connection);
    if (session === null) return { kind: 'unsettled', finding: 'lost', reason: `upstream ${this.name} offers no tasks on this connection (${connection.described}): task ${taskId} cannot be asked for` };
    connection.calls += 1;
    let execution: ToolExecution<unknown> | undefined;
    try {
      execution = await session.resumeTask(reference as unknown as SerializedTaskReference, { requestTimeoutMs: context.responseTimeoutMs, signal: deadline });
      connection.taskExecutions.add(execution);
      const { outcome } = await execution.settle({ signal: deadline });
      return answerOfTask(outcome, taskId);
    } catch (error) {
      if (execution !== undefined) await execution.detach().catch(() => undefined);
      if (deadline.aborted) return { kind: 'unsettled', finding: 'working', reason: `upstream ${this.name} still works on task ${taskId} after ${context.responseTimeoutMs} ms` };
      // The upstream answered, and does not have the task (expired, or it was another session's), or the reference is not one.
      if (error instanceof JsonRpcResponseError || error instanceof TypeError) return { kind: 'unsettled', finding: 'lost', reason: `upstream ${this.name} cannot give task ${taskId}: ${error.message}` };
      this.drop(connection, `asking for task ${taskId} failed: ${describeError(error)}`);
      return { kind: 'unsettled', finding: 'unreachable', reason: `upstream ${this.name} could not be asked for task ${taskId}: ${describeError(error)}` };
    } finally {
      if (execution !== undefined) connection.taskExecutions.delete(execution);
      this.leave(connection);
    }
  }

  /** A task-augmented call that failed before a task was given: the upstream's error answer, or what the failure means. */
  private taskErrorAnswer(error: unknown, connection: Connection, deadline: AbortSignal): CallAnswer {
    if (error instanceof JsonRpcResponseError) return { kind: 'error_answer', message: `the upstream answered with error ${error.code}: ${error.message}` };
    if (deadline.aborted) return { kind: 'unknown', reason: 'timeout_after_send' };
    // ext-tasks wraps what the SDK's client threw: the cause says whether anything left.
    const cause = (error as { cause?: unknown }).cause;
    return this.answerOf(cause instanceof Error ? cause : error, connection);
  }

  /** A call or a task question is done with the connection: a connection given up is closed after its last one. */
  private leave(connection: Connection): void {
    connection.calls -= 1;
    if (!connection.alive && connection.calls === 0) void this.closeConnection(connection);
  }

  /** Closes a connection: task executions still followed on it are released first, never cancelled. */
  private async closeConnection(connection: Connection): Promise<void> {
    await Promise.all([...connection.taskExecutions].map((execution) => execution.detach().catch(() => undefined)));
    connection.taskExecutions.clear();
    await connection.tasks?.close().catch(() => undefined);
    await connection.client.close().catch(() => undefined);
  }

  /** What a failed tools/call means: the upstream answered with an error, it may have acted, or nothing left. */
  private answerOf(error: unknown, connection: Connection): CallAnswer {
    if (error instanceof ProtocolError) return { kind: 'error_answer', message: `the upstream answered with error ${error.code}: ${error.message}` };
    if (error instanceof SdkHttpError) {
      this.drop(connection, `HTTP ${error.status ?? '?'}: ${error.message}`);
      const status = error.status ?? 0;
      // The endpoint refused the request before any tool ran (an unknown session, a bad request, no authorization).
      if (status >= 400 && status < 500) return { kind: 'not_sent', reason: `upstream ${this.name} (${this.where}) refused the request with HTTP ${status}: ${error.message}` };
      return { kind: 'unknown', reason: 'connection_reset' };
    }
    if (error instanceof SdkError) {
      switch (error.code) {
        case SdkErrorCode.RequestTimeout:
          return { kind: 'unknown', reason: 'timeout_after_send' };
        case SdkErrorCode.NotConnected:
          this.drop(connection, 'not connected');
          return { kind: 'not_sent', reason: `the connection to upstream ${this.name} (${this.where}) closed before the call was written` };
        case SdkErrorCode.InvalidResult:
        case SdkErrorCode.UnsupportedResultType:
        case SdkErrorCode.InputRequiredRoundsExceeded:
          // The upstream answered, not with a result the channel can take (or asking for input it cannot give).
          return { kind: 'error_answer', message: `the upstream's answer could not be taken: ${error.message}` };
        default:
          this.drop(connection, error.message);
          return { kind: 'unknown', reason: 'connection_reset' };
      }
    }
    const code = causeCode(error);
    if (code !== undefined && NEVER_CONNECTED.has(code)) {
      this.drop(connection, code);
      return { kind: 'not_sent', reason: `could not connect to upstream ${this.name} at ${this.where} (${code})` };
    }
    this.drop(connection, (error as Error).message ?? String(error));
    return { kind: 'unknown', reason: 'connection_reset' };
  }

  /** A connection ready for a call, its tools current. */
  private async ready(context: CallContext): Promise<Connection> {
    if (this.closed) throw new NotSent(`the channel is closing; nothing was sent to upstream ${this.name}`);
    if (context.secret !== undefined) this.keepSecret(context.secret);
    let connection = this.connection?.alive === true ? this.connection : undefined;
    if (connection === undefined) {
      const opening = this.open('a call');
      connection = await deadline(opening, context.connectTimeoutMs, () => `upstream ${this.name} (${this.where}) did not answer within the connect timeout (${context.connectTimeoutMs} ms)`);
    }
    if (connection.stale || !this.notified(connection)) {
      const why = connection.stale ? LIST_CHANGED : 'it cannot say when its tools change';
      await deadline(this.refresh(connection, why), context.responseTimeoutMs, () => `upstream ${this.name} did not list its tools within the response timeout (${context.responseTimeoutMs} ms)`);
    }
    if (!connection.alive) throw new NotSent(`the connection to upstream ${this.name} (${this.where}) closed before the call was written`);
    return connection;
  }

  /**
   * Whether a change of the upstream's tools reaches this connection: on 2026-07-28 its `subscriptions/listen` stream
   * is open; on 2025-11-25 the upstream declares `tools.listChanged` and has a stream to send it on (stdio always, HTTP
   * its GET stream). Without it, tools/list is read again before every call.
   */
  private notified(connection: Connection): boolean {
    const client = connection.client;
    if (client.getServerCapabilities()?.tools?.listChanged !== true) return false;
    if (client.getProtocolEra() === 'modern') return client.autoOpenedSubscription !== undefined;
    return this.transport.kind === 'stdio' || this.getStreamOpen;
  }

  /** Reads the upstream's tools again; a failure closes the connection (the next call opens another). */
  private refresh(connection: Connection, why: string): Promise<void> {
    connection.stale = false;
    connection.refreshing ??= (async () => {
      try {
        const { tools } = await connection.client.listTools(undefined, { timeout: OPEN_TIMEOUT_MS, cacheMode: 'refresh' });
        const before = connection.tools;
        connection.tools = new Map(tools.map((tool) => [tool.name, tool]));
        this.logRefresh(before, connection.tools, why);
      } catch (error) {
        this.drop(connection, `tools/list failed: ${(error as Error).message}`);
        throw new NotSent(`upstream ${this.name} (${this.where}) could not list its tools: ${(error as Error).message}`);
      } finally {
        connection.refreshing = undefined;
      }
    })();
    return connection.refreshing;
  }

  private logRefresh(before: ReadonlyMap<string, Tool>, after: ReadonlyMap<string, Tool>, why: string): void {
    const changes = toolChanges(before, after);
    this.lastListed = after;
    const { changed, added, removed } = changes;
    const differences = [
      ...(changed.length > 0 ? [`changed: ${changed.join(', ')}`] : []),
      ...(added.length > 0 ? [`new: ${added.join(', ')}`] : []),
      ...(removed.length > 0 ? [`gone: ${removed.join(', ')}`] : []),
    ];
    // Read again before every call when the upstream cannot notify: only a difference is worth a line then.
    if (why.startsWith('it cannot say') && differences.length === 0) return;
    this.log.log(`upstream ${this.name}: tools/list read again (${why}): ${after.size} tools${differences.length === 0 ? ', none changed' : `; ${differences.join('; ')}`}`);
    for (const listener of this.onRefresh) listener(after, why, changes);
  }

  /** Opens a connection (one at a time: a second caller waits for the same one). */
  private open(why: string): Promise<Connection> {
    if (this.opening !== undefined) return this.opening;
    if (this.restart !== undefined) {
      clearTimeout(this.restart.timer);
      this.restart = undefined;
    }
    const startedAt = Date.now();
    const opening = this.connect(why).then(
      (connection) => {
        this.opening = undefined;
        return connection;
      },
      (error: unknown) => {
        this.opening = undefined;
        // A child that could not be started (or answer) is tried again after a pause, whether or not a call waits.
        if (this.transport.kind === 'stdio') this.scheduleRestart(startedAt);
        throw error;
      },
    );
    this.opening = opening;
    // The caller may stop waiting (its connect timeout); the opening goes on for the next call.
    opening.catch(() => undefined);
    return opening;
  }

  private async connect(why: string): Promise<Connection> {
    let connection: Connection | undefined;
    const client = new Client(CLIENT_INFO, {
      // The upstream may speak 2025-11-25 or 2026-07-28: the SDK probes with server/discover and falls back.
      versionNegotiation: { mode: 'auto' },
      // Told at once, refreshed by the session: a call that follows the notification waits for the new list.
      listChanged: {
        tools: {
          autoRefresh: false,
          debounceMs: 0,
          onChanged: () => {
            if (connection !== undefined) this.changed(connection);
          },
        },
      },
    });
    const stderr: string[] = [];
    const transport = this.transportFor(stderr);
    const startedAt = Date.now();
    try {
      await client.connect(transport, { timeout: OPEN_TIMEOUT_MS });
      const { tools } = await client.listTools(undefined, { timeout: OPEN_TIMEOUT_MS, cacheMode: 'refresh' });
      const pid = transport instanceof StdioClientTransport ? transport.pid : null;
      connection = {
        client,
        openedAt: startedAt,
        tools: new Map(tools.map((tool) => [tool.name, tool])),
        stale: false,
        alive: true,
        refreshing: undefined,
        calls: 0,
        tasks: undefined,
        taskExecutions: new Set(),
        described: `${client.getNegotiatedProtocolVersion() ?? 'unknown revision'}${pid === null ? '' : `, pid ${pid}`}`,
      };
    } catch (error) {
      await client.close().catch(() => undefined);
      const said = stderr.length === 0 ? '' : `; it said: ${stderr.join(' | ')}`;
      const reason = `could not open upstream ${this.name} (${this.where}): ${describeError(error)}${said}`;
      this.log.warn(reason);
      throw new NotSent(reason);
    }
    const opened = connection;
    client.onclose = () => this.closedUnderneath(opened, stderr);
    // 2026-07-28: the stream that carries list_changed; once it is gone a change could pass unseen, so the connection is done.
    void client.autoOpenedSubscription?.closed.then((how) => {
      if (how !== 'local') this.drop(opened, 'its subscriptions/listen stream ended');
    });
    this.connection = opened;
    this.log.log(`upstream ${this.name} (${this.where}) opened for ${why} (${opened.described}): ${opened.tools.size} tools listed`);
    // A connection after another compares its listing with the last one: a change while no connection was open counts.
    const changes = this.lastListed === undefined ? undefined : toolChanges(this.lastListed, opened.tools);
    this.lastListed = opened.tools;
    for (const listener of this.onRefresh) listener(opened.tools, 'a new connection', changes);
    return opened;
  }

  private transportFor(stderr: string[]): StreamableHTTPClientTransport | StdioClientTransport {
    if (this.transport.kind === 'http') {
      return new StreamableHTTPClientTransport(new URL(this.transport.url), {
        fetch: (input, init) => this.fetch(input, init),
        // Resuming a stream (when the upstream numbers its events) and reopening the GET stream; a POST whose answer
        // was cut without event ids is not resumed, and the call's own watch tells it.
        reconnectionOptions: { initialReconnectionDelay: 500, maxReconnectionDelay: 5_000, reconnectionDelayGrowFactor: 2, maxRetries: 3 },
      });
    }
    const { command, args, env, cwd } = this.transport;
    const transport = new StdioClientTransport({ command, args: [...args], env: { ...env }, ...(cwd === undefined ? {} : { cwd }), stderr: 'pipe' });
    // What the child says is kept to tell why it exited; it is not logged line by line (the upstream's own log).
    transport.stderr?.on('data', (chunk: Buffer) => {
      for (const line of String(chunk).split('\n').filter((text) => text.trim() !== '')) {
        stderr.push(line.slice(0, 300));
        if (stderr.length > STDERR_LINES) stderr.shift();
      }
    });
    return transport;
  }

  /**
   * The fetch of a url upstream's transport: it sets the credential (the attempt's own on its tools/call, the last one
   * given on the connection's other requests), watches the connection that carries an attempt, and follows the GET
   * stream a 2025-11-25 upstream notifies on.
   */
  private async fetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const headers = new Headers(init?.headers);
    const body = typeof init?.body === 'string' ? init.body : '';
    const watch = this.watchIn(body);
    const secret = watch?.secret ?? this.secret;
    if (secret !== undefined) headers.set('authorization', `Bearer ${secret.toString('utf8')}`);
    // A request that fails before its answer began rejects the call itself, with the reason the call's answer reads.
    const response = await fetch(input, { ...init, headers });
    const method = (init?.method ?? 'GET').toUpperCase();
    const streaming = (response.headers.get('content-type') ?? '').includes('text/event-stream');
    if (method === 'GET' && response.ok && streaming) {
      this.getStreamOpen = true;
      const closed = () => (this.getStreamOpen = false);
      return rebuilt(response, watched(response.body!, { ended: closed, failed: closed }));
    }
    // An answer cut mid-stream leaves the SDK waiting (nothing to resume without event ids): the call's watch ends the wait.
    if (watch === undefined || response.body === null) return response;
    return rebuilt(response, watched(response.body, { ended: () => undefined, failed: () => watch.break() }));
  }

  /** The attempt whose tools/call a request body carries (its execution id in `_meta`). */
  private watchIn(body: string): AttemptWatch | undefined {
    if (this.watches.size === 0 || !body.includes(EXECUTION_ID_META)) return undefined;
    const id = /"io\.oncegate\/execution-id"\s*:\s*"([^"]+)"/.exec(body)?.[1];
    return id === undefined ? undefined : this.watches.get(id);
  }

  private watch(context: CallContext): AttemptWatch {
    let resolve!: () => void;
    const broken = new Promise<void>((done) => (resolve = done));
    const watch: AttemptWatch = { secret: context.secret, broken, break: () => resolve() };
    this.watches.set(context.executionId, watch);
    return watch;
  }

  /** A copy of the credential the connection's own requests carry; the one it replaces is wiped. */
  private keepSecret(secret: Buffer): void {
    if (this.secret?.equals(secret)) return;
    this.secret?.fill(0);
    this.secret = Buffer.from(secret);
  }

  private changed(connection: Connection): void {
    connection.stale = true;
    // Read at once, so that the log tells of the change even when no call follows; a call waits for it.
    this.refresh(connection, LIST_CHANGED).catch(() => undefined);
  }

  /** The connection closed without the channel closing it: a url upstream opens again on the next call; a child is restarted. */
  private closedUnderneath(connection: Connection, stderr: readonly string[]): void {
    if (!connection.alive) return;
    connection.alive = false;
    if (this.closed) return;
    const said = stderr.length === 0 ? '' : `; it said: ${stderr.join(' | ')}`;
    this.log.warn(`upstream ${this.name} (${this.where}, ${connection.described}) closed its connection${said}`);
    if (this.transport.kind === 'stdio') this.scheduleRestart(connection.openedAt);
  }

  /** Gives up a connection that failed; the next call (or the supervisor of a child) opens another. */
  private drop(connection: Connection, why: string): void {
    if (!connection.alive) return;
    connection.alive = false;
    this.log.warn(`upstream ${this.name} (${this.where}): connection given up (${why}); the next call opens another`);
    if (connection.calls === 0) void this.closeConnection(connection);
    if (this.transport.kind === 'stdio' && !this.closed) this.scheduleRestart(connection.openedAt);
  }

  /**
   * A stdio child that exited is started again after a pause that doubles while it keeps exiting soon after its start
   * (up to 30 s); a call that finds it down starts it at once.
   */
  private scheduleRestart(startedAt: number): void {
    if (this.closed || this.restart !== undefined || this.opening !== undefined) return;
    if (Date.now() - startedAt >= STABLE_MS) this.pauseMs = FIRST_PAUSE_MS;
    const pause = this.pauseMs;
    this.pauseMs = Math.min(this.pauseMs * 2, LONGEST_PAUSE_MS);
    this.log.log(`upstream ${this.name}: starting it again in ${pause} ms`);
    const timer = setTimeout(() => {
      this.restart = undefined;
      this.open('its supervisor, after it exited').catch(() => undefined);
    }, pause);
    timer.unref();
    this.restart = { timer };
  }

  /** Closes the connection (a stdio child: its stdin closed, then SIGTERM, then SIGKILL) and stops supervising it. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.restart !== undefined) clearTimeout(this.restart.timer);
    const opening = this.opening;
    const connection = this.connection;
    this.connection = undefined;
    if (connection !== undefined) connection.alive = false;
    // Attempts in flight have recorded their outcome by now (the kit drains before it closes the channel).
    if (connection !== undefined) await this.closeConnection(connection);
    await opening?.then((opened) => opened.client.close()).catch(() => undefined);
    this.secret?.fill(0);
    this.secret = undefined;
  }
}

/**
 * Unknown once the connection that carried the attempt broke (an HTTP answer cut mid-stream may be the only sign), after
 * a short grace in which a result already on its way still wins.
 */
function brokenAnswer(watch: AttemptWatch): Promise<CallAnswer> {
  return watch.broken.then(() => new Promise<CallAnswer>((resolve) => setTimeout(() => resolve({ kind: 'unknown', reason: 'connection_reset' }), SETTLE_GRACE_MS)));
}

/** A task's outcome as the channel records it: the upstream's result, or its word that the task failed or was cancelled. */
function answerOfTask(outcome: TaskOutcome<unknown>, taskId: string | undefined): UpstreamAnswer {
  const task = taskId === undefined ? 'the call' : `task ${taskId}`;
  switch (outcome.status) {
    case 'completed':
      return { kind: 'result', result: outcome.result as CallToolResult };
    case 'failed':
      return { kind: 'error_answer', message: `the upstream's ${task} failed: ${outcome.error.message}` };
    case 'cancelled':
      return { kind: 'error_answer', message: `the upstream cancelled ${task} before it completed; it gave no result` };
  }
}

/** `promise`, or a NotSent saying `why` once `ms` passed (what it was waiting for goes on). */
async function deadline<T>(promise: Promise<T>, ms: number, why: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new NotSent(why())), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** A response with another body and the same status and headers. */
function rebuilt(response: Response, body: ReadableStream<Uint8Array>): Response {
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** A response body passed through as it comes, telling when it ended and when it broke before its end. */
function watched(body: ReadableStream<Uint8Array>, on: { readonly ended: () => void; readonly failed: () => void }): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { done, value } = await reader.read();
        if (done) {
          on.ended();
          controller.close();
        } else controller.enqueue(value);
      } catch (error) {
        on.failed();
        controller.error(error);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/** The system error code under a fetch failure (undici wraps it once or twice). */
function causeCode(error: unknown): string | undefined {
  for (let cause = error, depth = 0; cause !== undefined && cause !== null && depth < 4; cause = (cause as { cause?: unknown }).cause, depth += 1) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function describeError(error: unknown): string {
  const code = causeCode(error);
  const message = error instanceof Error ? error.message : String(error);
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
}

/** How two listings of an upstream's tools differ, by tool name. */
export interface ToolChanges {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Listed in both, defined otherwise (anything of the definition: schema, annotations, description). */
  readonly changed: readonly string[];
}

export function toolChanges(before: ReadonlyMap<string, Tool>, after: ReadonlyMap<string, Tool>): ToolChanges {
  return {
    added: [...after.keys()].filter((name) => !before.has(name)),
    removed: [...before.keys()].filter((name) => !after.has(name)),
    changed: [...after.keys()].filter((name) => before.has(name) && JSON.stringify(before.get(name)) !== JSON.stringify(after.get(name))),
  };
}
