import { InvalidEventStoreArgumentError } from '@oncegate/event-store';

/**
 * Every KurrentDB stream one store uses, named from one place. A store lives under a namespace so several stores
 * share a server: the port's stream `s` is `<namespace>:s`, and the store's own streams are `<namespace>~…`. A
 * namespace holds neither `:` nor `~`, so no port stream id, whatever it holds, can name one of the store's own
 * streams or another namespace's.
 */
export interface StreamNames {
  readonly namespace: string;
  /** The KurrentDB stream holding the port's stream `streamId`. */
  stream(streamId: string): string;
  /** The port's stream id of a KurrentDB stream of this store; `undefined` for a stream that is not a port stream. */
  portStreamId(streamName: string): string | undefined;
  /** The store's log: one record per event, in the port's global order (position N is revision N - 1). */
  readonly log: string;
  /** Exists once an event with this id is stored: the store-wide uniqueness of event ids. */
  eventId(id: string): string;
  /** The event id of an event-id stream of this store; `undefined` for any other stream. */
  eventIdOf(streamName: string): string | undefined;
  /** A durable consumer's checkpoints. */
  checkpoint(consumer: string): string;
  /** The liveness leases, one document. */
  readonly leases: string;
  /** The exclusive claims, one document. */
  readonly claims: string;
  /** The store's layout version, written when the store is first opened. */
  readonly store: string;
}

const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

export function streamNames(namespace: string): StreamNames {
  if (typeof namespace !== 'string' || !NAMESPACE.test(namespace)) {
    throw new InvalidEventStoreArgumentError(
      'namespace',
      `must be 1 to 100 letters, digits, '_', '.' or '-', starting with a letter or digit, got ${JSON.stringify(namespace)}`,
    );
  }
  const streamPrefix = `${namespace}:`;
  const own = `${namespace}~`;
  const eventIdPrefix = `${own}event-id-`;
  return {
    namespace,
    stream: (streamId) => streamPrefix + streamId,
    portStreamId: (streamName) => (streamName.startsWith(streamPrefix) ? streamName.slice(streamPrefix.length) : undefined),
    log: `${own}log`,
    eventId: (id) => eventIdPrefix + id,
    eventIdOf: (streamName) => (streamName.startsWith(eventIdPrefix) ? streamName.slice(eventIdPrefix.length) : undefined),
    checkpoint: (consumer) => `${own}checkpoint-${consumer}`,
    leases: `${own}leases`,
    claims: `${own}claims`,
    store: `${own}store`,
  };
}
