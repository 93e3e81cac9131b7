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
}

const STREAM_PREFIX = 'mcp-sse-';

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

  forSession(sessionId: string): McpEventStore {
    const streamName = (streamId: StreamId) => `${STREAM_PREFIX}${sessionId}-${streamId}`;
    const aad = (streamId: StreamId) => Buffer.from(`${sessionId}\u0000${streamId}`);
    const parse = (eventId: EventId): { streamId: StreamId; revision: number } | undefined => {
      const match = /^([A-Za-z0-9_-]{1,128})\.(-1|\d{1,15})$/.exec(eventId);
      return match ? { streamId: match[1]!, revision: Number(match[2]) } : undefined;
    };
    return {
      storeEvent: async (streamId, message) => {
        const sealed = this.cipher.seal(Buffer.from(JSON.stringify(message)), aad(streamId));
        const data: StoredSseEvent = {
          keyId: sealed.keyId,
          iv: sealed.iv.toString('base64'),
          tag: sealed.tag.toString('base64'),
          ciphertext: sealed.ciphertext.toString('base64'),
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
      getStreamIdForEventId: async (eventId) => parse(eventId)?.streamId,
      replayEventsAfter: async (lastEventId, { send }) => {
        const parsed = parse(lastEventId);
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
}
