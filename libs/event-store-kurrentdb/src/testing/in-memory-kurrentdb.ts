import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  ANY,
  NO_STREAM,
  STREAM_EXISTS,
  StreamNotFoundError,
  UnavailableError,
  UnsupportedError,
  WrongExpectedVersionError,
  type AppendResult,
  type AppendStreamRequest,
  type AppendStreamState,
  type EventData,
  type MultiAppendResult,
  type ResolvedEvent,
  type StreamSubscription,
} from '@kurrent/kurrentdb-client';
import type { KurrentDbClientApi } from '../kurrentdb-event-store';

/**
 * A stand-in for the calls of the official client that the store makes, kept in memory with the semantics the
 * client and KurrentDB document: expected stream states checked per stream, a multi-stream append applied whole or
 * refused whole (naming the first stream whose state does not hold), reads by revision in either direction that fail
 * with `StreamNotFoundError` for a stream that does not exist, `$maxCount` hiding older events, JSON data and metadata
 * stored as text and parsed back on reads, and live stream subscriptions confirmed before they deliver.
 *
 * It is not KurrentDB: it lets the store's own logic (planning, encoding, positions, compare-and-set documents,
 * subscriptions) run the shared contract suite where no server can run. What the server itself does is checked only
 * against a real one (`ONCEGATE_KURRENTDB_URL`, see docs/event-store.md).
 */
export class InMemoryKurrentDb {
  private readonly streams = new Map<string, StoredEvent[]>();
  private readonly maxCounts = new Map<string, number>();
  private readonly subscribers = new Set<LiveSubscriber>();
  private commit = 0n;
  private faults: Fault[] = [];

  constructor(private readonly options: { readonly multiStreamAppend?: boolean } = {}) {}

  /** A client of this server; each is a separate connection, as two stores opened on one server are. */
  client(): KurrentDbClientApi & { readonly calls: number } {
    return new StandInClient(this);
  }

  /**
   * The next multi-stream append fails with the server unreachable: `'before'` writes nothing, `'after'` commits and
   * then loses the answer (the append is stored, the caller is told the server was unavailable).
   */
  failNextAppend(when: 'before' | 'after'): void {
    this.faults.push({ when });
  }

  /** Every event of a stream as stored, `$maxCount` aside. */
  storedEvents(streamName: string): readonly StoredEvent[] {
    return this.streams.get(streamName) ?? [];
  }

  streamNames(): string[] {
    return [...this.streams.keys()];
  }

  /** @internal */
  append(streamName: string, events: readonly EventData[], expected: AppendStreamState, metadataOf: (event: EventData) => string | undefined): AppendResult {
    this.check(streamName, expected);
    const stored = this.write(streamName, events, metadataOf);
    return { success: true, nextExpectedRevision: stored.at(-1)!.revision, position: { commit: this.commit, prepare: this.commit } };
  }

  /** @internal */
  multiAppend(requests: readonly AppendStreamRequest[]): MultiAppendResult {
    if (this.options.multiStreamAppend === false) throw new UnsupportedError('multiStreamAppend', '25.1');
    for (const request of requests) {
      for (const event of request.events) {
        const { metadata } = event;
        if (metadata == null) continue;
        // The client's own check (multiStreamAppend.js): the multi-stream append carries metadata as string properties.
        if (metadata instanceof Uint8Array || typeof metadata !== 'object' || Array.isArray(metadata) || Object.values(metadata).some((value) => typeof value !== 'string')) {
          throw new Error('multiStreamAppend requires metadata to be a plain object with string keys and string values.');
        }
      }
    }
    const fault = this.faults.shift();
    if (fault?.when === 'before') throw new UnavailableError(undefined, 'the stand-in server is unreachable');
    for (const request of requests) this.check(request.streamName, request.expectedState);
    const responses = requests.map((request) => {
      // The server keeps the properties as the event's metadata, beside its own schema keys.
      const stored = this.write(request.streamName, request.events, (event) =>
        JSON.stringify({ ...(event.metadata as Record<string, string>), '$schema.format': 'Json', '$schema.name': event.type }),
      );
      return { streamName: request.streamName, revision: stored.at(-1)!.revision };
    });
    if (fault?.when === 'after') throw new UnavailableError(undefined, 'the stand-in server went away before answering');
    return { position: this.commit, responses };
  }

  /** @internal */
  read(streamName: string, direction: 'forwards' | 'backwards', from: 'start' | 'end' | bigint, maxCount: number): ResolvedEvent[] {
    const all = this.streams.get(streamName);
    if (all === undefined) throw new StreamNotFoundError(undefined, streamName);
    const maxCountOfStream = this.maxCounts.get(streamName);
    const visible = maxCountOfStream === undefined ? all : all.slice(Math.max(0, all.length - maxCountOfStream));
    const events =
      direction === 'forwards'
        ? visible.filter((event) => from === 'start' || from === 'end' || event.revision >= from)
        : visible.filter((event) => from === 'end' || from === 'start' || event.revision <= from).reverse();
    return events.slice(0, maxCount).map(resolved);
  }

  /** @internal */
  setMaxCount(streamName: string, maxCount: number): void {
    this.maxCounts.set(streamName, maxCount);
  }

  /** @internal */
  subscribe(subscriber: LiveSubscriber): void {
    this.subscribers.add(subscriber);
  }

  /** @internal */
  unsubscribe(subscriber: LiveSubscriber): void {
    this.subscribers.delete(subscriber);
  }

  private check(streamName: string, expected: AppendStreamState): void {
    const last = this.streams.get(streamName)?.at(-1)?.revision;
    const holds =
      expected === ANY ? true : expected === NO_STREAM ? last === undefined : expected === STREAM_EXISTS ? last !== undefined : last === expected;
    if (!holds) throw new WrongExpectedVersionError(undefined, { streamName, expected, current: last ?? NO_STREAM });
  }

  private write(streamName: string, events: readonly EventData[], metadataOf: (event: EventData) => string | undefined): StoredEvent[] {
    const stream = this.streams.get(streamName) ?? [];
    this.streams.set(streamName, stream);
    const written = events.map((event, i): StoredEvent => {
      this.commit += 1n;
      return {
        streamId: streamName,
        id: event.id,
        revision: BigInt(stream.length + i),
        type: event.type,
        data: JSON.stringify(event.data),
        metadata: metadataOf(event),
        created: new Date(),
        commit: this.commit,
      };
    });
    stream.push(...written);
    for (const subscriber of this.subscribers) {
      if (subscriber.streamName === streamName) for (const event of written) subscriber.deliver(resolved(event));
    }
    return written;
  }
}

interface Fault {
  readonly when: 'before' | 'after';
}

export interface StoredEvent {
  readonly streamId: string;
  readonly id: string;
  readonly revision: bigint;
  readonly type: string;
  /** JSON text, as the server keeps a JSON event's bytes. */
  readonly data: string;
  readonly metadata: string | undefined;
  readonly created: Date;
  readonly commit: bigint;
}

interface LiveSubscriber {
  readonly streamName: string;
  deliver(event: ResolvedEvent): void;
}

/** What a read returns: the data and metadata parsed from their stored text, as the client parses them. */
function resolved(event: StoredEvent): ResolvedEvent {
  return {
    event: {
      streamId: event.streamId,
      id: event.id,
      revision: event.revision,
      type: event.type,
      data: JSON.parse(event.data),
      metadata: event.metadata === undefined ? undefined : JSON.parse(event.metadata),
      isJson: true,
      created: event.created,
      position: { commit: event.commit, prepare: event.commit },
    },
    commitPosition: event.commit,
  } as ResolvedEvent;
}

/** A turn of the event loop, so that calls interleave as network calls do. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

class StandInClient implements KurrentDbClientApi {
  calls = 0;
  private disposed = false;

  constructor(private readonly server: InMemoryKurrentDb) {}

  private enter(): void {
    this.calls += 1;
    if (this.disposed) throw new UnavailableError(undefined, 'the client was disposed');
  }

  readStream: KurrentDbClientApi['readStream'] = (streamName, options = {}) => {
    const server = this.server;
    const enter = () => this.enter();
    async function* read(): AsyncGenerator<ResolvedEvent> {
      enter();
      await turn();
      const events = server.read(streamName, options.direction ?? 'forwards', options.fromRevision ?? 'start', Number(options.maxCount ?? Number.MAX_SAFE_INTEGER));
      yield* events;
    }
    return read() as ReturnType<KurrentDbClientApi['readStream']>;
  };

  appendToStream: KurrentDbClientApi['appendToStream'] = async (streamName, events, options = {}) => {
    this.enter();
    await turn();
    const list = Array.isArray(events) ? events : [events];
    return this.server.append(streamName, list, options.streamState ?? ANY, (event) => (event.metadata === undefined ? undefined : JSON.stringify(event.metadata)));
  };

  multiStreamAppend: KurrentDbClientApi['multiStreamAppend'] = async (requests) => {
    this.enter();
    await turn();
    return this.server.multiAppend(requests);
  };

  setStreamMetadata: KurrentDbClientApi['setStreamMetadata'] = async (streamName, metadata) => {
    this.enter();
    await turn();
    if (metadata.maxCount !== undefined) this.server.setMaxCount(streamName, metadata.maxCount);
    return { success: true, nextExpectedRevision: 0n };
  };

  subscribeToStream: KurrentDbClientApi['subscribeToStream'] = (streamName) => {
    this.enter();
    const server = this.server;
    const subscriber: LiveSubscriber = { streamName, deliver: (event) => readable.push(event) };
    const readable = new Readable({ objectMode: true, read: () => undefined }) as Readable & { unsubscribe(): Promise<void>; id?: string };
    readable.id = randomUUID();
    readable.unsubscribe = async () => {
      server.unsubscribe(subscriber);
      readable.destroy();
    };
    // Confirmed on a later turn, as the server confirms a subscription before it delivers anything.
    setImmediate(() => {
      if (readable.destroyed) return;
      server.subscribe(subscriber);
      readable.emit('confirmation');
    });
    return readable as unknown as StreamSubscription;
  };

  dispose: KurrentDbClientApi['dispose'] = async () => {
    this.disposed = true;
  };
}
