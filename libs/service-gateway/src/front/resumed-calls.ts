import type { ServerResponse } from 'node:http';
import { Logger } from '@nestjs/common';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';
import { executionIdOfStream, type ExecutionId, type ProtocolCorrelation } from '@oncegate/domain';
import { readAllFrom, type EventStore } from '@oncegate/event-store';
import { answeredId, requestKey, type SessionDeliveries } from './delivery-evidence';
import { ONCEGATE_ERROR_CODES } from './mcp-errors';
import { parseEventId } from './sse-event-id';
import type { SseResumptionStore, StreamCalls } from './sse-resumption-store';
import type { ToolCalls } from './tool-calls';

/** The facts of a session this needs. */
export interface ResumingSession {
  readonly id: string;
  readonly actor: string;
  readonly deliveries: SessionDeliveries;
  /**
   * Response streams opened by this process within the resumption retention; a stream not among them was opened
   * before a restart, or longer ago than anything is kept.
   */
  readonly streams: { has(streamId: string): boolean };
}

interface FoundCall {
  readonly executionId: ExecutionId;
  /** The call attached to an earlier execution (RetryAttached) rather than creating it. */
  readonly attached: boolean;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/**
 * Answers the tools/calls of a response stream that a client resumes (`Last-Event-ID`) after the gateway
 * restarted. The restored session's SDK transport never saw those requests, so on its own it would hold the
 * stream open and send nothing. Each request is found in the journal by its session and JSON-RPC id (the
 * ExecutionAccepted or RetryAttached recorded after the stream's journal position), answered as the original
 * call would have been — the result, an unknown outcome, or "still in progress" after the call wait — stored on
 * the stream (so a further resumption replays it) and written. Nothing is dispatched for it.
 */
export class ResumedCalls {
  private readonly log = new Logger('mcp-http');
  /** One answer per resumed stream, shared by the clients' reconnections to it. */
  private readonly answering = new Map<string, Promise<void>>();

  constructor(
    private readonly store: EventStore,
    private readonly resumption: SseResumptionStore,
    private readonly toolCalls: ToolCalls,
  ) {}

  /** Handles the resumption when the stream answers calls this process never received; false otherwise. */
  async handle(session: ResumingSession, lastEventId: string, res: ServerResponse): Promise<boolean> {
    const last = parseEventId(lastEventId);
    if (last === undefined || session.streams.has(last.streamId)) return false;
    const calls = await this.resumption.callsOf(session.id, last.streamId);
    if (calls === undefined) return false;

    const key = `${session.id}\u0000${last.streamId}`;
    let answering = this.answering.get(key);
    if (answering === undefined) {
      answering = this.answer(session, last.streamId, calls)
        .catch((error: unknown) => this.log.error(`answering resumed stream ${last.streamId} failed: ${(error as Error)?.message ?? error}`))
        .finally(() => this.answering.delete(key));
      this.answering.set(key, answering);
    }
    res.writeHead(200, { ...SSE_HEADERS, 'mcp-session-id': session.id });
    res.flushHeaders();
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    await Promise.race([answering, closed]);
    if (res.destroyed) return true;

    // Everything after the client's cursor, the answers just stored included.
    const written: RequestId[] = [];
    await this.resumption.forSession(session.id).replayEventsAfter(lastEventId, {
      send: async (eventId, message) => {
        if (res.destroyed) return;
        res.write(`event: message\nid: ${eventId}\ndata: ${JSON.stringify(message)}\n\n`);
        const answered = answeredId(message);
        if (answered !== undefined) written.push(answered);
      },
    });
    res.once('close', () => {
      for (const requestId of written) session.deliveries.streamEnded(requestId, res.writableFinished);
    });
    res.end();
    return true;
  }

  /** Answers each call of the stream that has no stored response yet, and stores the answers on the stream. */
  private async answer(session: ResumingSession, streamId: string, calls: StreamCalls): Promise<void> {
    const events = this.resumption.forSession(session.id);
    const answered = new Set<string>();
    await events.replayEventsAfter(`${streamId}.-1`, {
      send: async (_eventId, message) => {
        const id = answeredId(message);
        if (id !== undefined) answered.add(requestKey(id));
      },
    });
    const missing = calls.requestIds.filter((requestId) => !answered.has(requestKey(requestId)));
    if (missing.length === 0) return;
    const found = await this.findCalls(session.id, missing, calls.journalPosition);
    await Promise.all(
      missing.map(async (requestId) => {
        const message = await this.answerOne(session, requestId, found.get(requestKey(requestId)));
        const eventId = await events.storeEvent(streamId, message);
        session.deliveries.stored(requestId, eventId);
      }),
    );
  }

  private async answerOne(session: ResumingSession, requestId: RequestId, call: FoundCall | undefined): Promise<JSONRPCMessage> {
    const correlation: ProtocolCorrelation = { jsonRpcId: requestId, sessionId: session.id, transport: 'streamable-http' };
    const result =
      call === undefined
        ? undefined
        : await this.toolCalls.answerAgain(call.executionId, call.attached, {
            actor: session.actor,
            declaredRun: undefined,
            meta: {},
            correlation,
            // A stream that drops again is not a cancel: nothing may cancel the execution from here.
            signal: new AbortController().signal,
            delivery: session.deliveries.expect(requestId, undefined),
          });
    if (result !== undefined) return { jsonrpc: '2.0', id: requestId, result } as JSONRPCMessage;
    return {
      jsonrpc: '2.0',
      id: requestId,
      error: {
        code: ONCEGATE_ERROR_CODES.notFound,
        message: 'The gateway restarted before this call was recorded; nothing was sent for it. Call again to run it.',
      },
    };
  }

  /** The executions the requests were accepted into or attached to, from the journal after `position`. */
  private async findCalls(sessionId: string, requestIds: readonly RequestId[], position: number): Promise<Map<string, FoundCall>> {
    const wanted = new Set(requestIds.map(requestKey));
    const found = new Map<string, FoundCall>();
    if (wanted.size === 0) return found;
    const calls = readAllFrom(this.store, {
      after: position,
      filter: { streamPrefixes: ['execution-'], eventTypes: ['ExecutionAccepted', 'RetryAttached'] },
    });
    for await (const event of calls) {
      const correlation = (event.data as { correlation?: ProtocolCorrelation }).correlation;
      const executionId = executionIdOfStream(event.streamId);
      if (correlation?.sessionId !== sessionId || correlation.jsonRpcId === undefined || executionId === undefined) continue;
      const key = requestKey(correlation.jsonRpcId);
      if (wanted.has(key) && !found.has(key)) found.set(key, { executionId, attached: event.type === 'RetryAttached' });
      if (found.size === wanted.size) break;
    }
    return found;
  }
}
