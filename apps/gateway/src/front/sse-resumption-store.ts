import type { EventStore as McpEventStore, EventId, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { EventStoreUnavailableError, type EventStore } from '@oncegate/event-store';
import type { BlobCipher } from '@oncegate/sealed-store';

/** Notified when a stored JSON-RPC message is sent again on a resumed stream. */
export type ReplayListener = (sessionId: string, message: JSONRPCMessage) => void;

interface StoredSseEvent {
  readonly keyId: string;
  readonly iv: string;
  readonly tag: string;
  readonly ciphertext: string;
  /** On a request stream's priming event: the tools/call requests the stream answers (ids are not secret). */
  readonly calls?: StreamCalls;
}

/**
 * The tools/call requests one POST's response stream answers, and the journal position when they arrived: after
 * a restart, a client resuming that stream is answered from the journal (the executions carry the request ids).
 */
export interface StreamCalls {
  readonly requestIds: readonly (string | number)[];
  readonly journalPosition: number;
}

const STREAM_PREFIX = 'mcp-sse-';

/** Event ids are `<sdk stream id>.<revision>`. */
export function parseEventId(eventId: EventId): { streamId: StreamId; revision: number } | undefined {
  const match = /^([A-Za-z0-9_-]{1,128})\.(-1|\d{1,15})$/.exec(eventId);
  return match ? { streamId: match[1]!, revision: Number(match[2]) } : undefined;
}

/**
 * SSE resumability for the MCP SDK (its `EventStore` interface) backed by our event store, so `Last-Event-ID`
 * works after a gateway restart too. Messages can carry tool results, so each is sealed (AES-256-GCM, bound to
 * its stream) before it is written. Event ids are `<sdk stream id>.<revision>`. While the store cannot write, messages
 * are sent without being stored (a stream never waits on storage) and a resume replays only what was stored.
 */
export class SseResumptionStore {
  constructor(
    private readonly store: EventStore,
    private readonly cipher: BlobCipher,
    private readonly onReplay: ReplayListener = () => undefined,
  ) {}

  /** `callsOf` names the calls of the POST being handled, asked when its stream's priming event is stored. */
  forSession(sessionId: string, callsOf: () => StreamCalls | undefined = () => undefined): McpEventStore {
    const streamName = (streamId: StreamId) => `${STREAM_PREFIX}${sessionId}-${streamId}`;
    const aad = (streamId: StreamId) => Buffer.from(`${sessionId}\u0000${streamId}`);
    return {
      storeEvent: async (streamId, message) => {
        const sealed = this.cipher.seal(Buffer.from(JSON.stringify(message)), aad(streamId));
        const calls = Object.keys(message).length === 0 ? callsOf() : undefined;
        const data: StoredSseEvent = {
          keyId: sealed.keyId,
          iv: sealed.iv.toString('base64'),
          tag: sealed.tag.toString('base64'),
          ciphertext: sealed.ciphertext.toString('base64'),
          ...(calls !== undefined && calls.requestIds.length > 0 ? { calls } : {}),
        };
        try {
          const result = await this.store.appendToStream(streamName(streamId), [{ type: 'SseMessageStored', data }]);
          return `${streamId}.${result.nextExpectedRevision}`;
        } catch (error) {
          if (!(error instanceof EventStoreUnavailableError)) throw error;
          // Storage is unavailable: the message is still sent, only not kept for a resume. Its id names the last
          // stored revision (-1: none), so a resume from it replays whatever is stored after it.
          const stored = await this.store.streamRevision(streamName(streamId));
          return `${streamId}.${stored ?? -1}`;
        }
      },
      getStreamIdForEventId: async (eventId) => parseEventId(eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const parsed = parseEventId(lastEventId);
        if (parsed === undefined) throw new Error('Invalid event ID format');
        const events = await this.store.readStream(streamName(parsed.streamId), { fromRevision: parsed.revision + 1 });
        for (const event of events) {
          const data = event.data as StoredSseEvent;
          const plaintext = this.cipher.open(
            {
              keyId: data.keyId,
              iv: Buffer.from(data.iv, 'base64'),
              tag: Buffer.from(data.tag, 'base64'),
              ciphertext: Buffer.from(data.ciphertext, 'base64'),
            },
            aad(parsed.streamId),
          );
          const message = JSON.parse(plaintext.toString('utf8')) as JSONRPCMessage;
          // Priming events are stored as `{}` and carry nothing to replay.
          if (Object.keys(message).length === 0) continue;
          await send(`${parsed.streamId}.${event.revision}`, message);
          this.onReplay(sessionId, message);
        }
        return parsed.streamId;
      },
    };
  }

  /** The calls a request stream answers, from its priming event; `undefined` for any other stream. */
  async callsOf(sessionId: string, streamId: StreamId): Promise<StreamCalls | undefined> {
    const [first] = await this.store.readStream(`${STREAM_PREFIX}${sessionId}-${streamId}`, { maxCount: 1 });
    return (first?.data as StoredSseEvent | undefined)?.calls;
  }
}
