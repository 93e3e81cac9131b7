import { executionIdOfStream } from '@oncegate/domain';
import type { RecordedEvent } from '@oncegate/event-store';
import type { KafkaConfig } from '@oncegate/host-config';

/** One Kafka message as the relay produces it. */
export interface BusMessage {
  readonly key: string;
  readonly value: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * An event of the journal as a CloudEvents 1.0 message in the Kafka protocol binding, binary mode: the attributes are
 * `ce_` headers, the value is the event's `data` as JSON. Extensions (lower-case, as the specification asks):
 * `position` (the store's global position), `revision` (in its stream), `chainprev` and `chainhash` (the journal's
 * hash chain), `actor` and `schemaversion` (from the event's metadata). The key is the execution id for an execution's
 * events and the stream name for every other stream, so one stream's events share a partition and keep their order.
 */
export function cloudEventMessage(event: RecordedEvent, source: string): BusMessage {
  const metadata = event.metadata;
  const headers: Record<string, string> = {
    ce_specversion: '1.0',
    ce_id: event.id,
    ce_source: source,
    ce_type: event.type,
    ce_subject: event.streamId,
    ce_time: typeof metadata['recordedAt'] === 'string' ? metadata['recordedAt'] : event.recordedAt,
    'content-type': 'application/json',
    ce_position: String(event.position),
    ce_revision: String(event.revision),
    ce_chainprev: event.prev,
    ce_chainhash: event.hash,
  };
  if (typeof metadata['actor'] === 'string') headers['ce_actor'] = metadata['actor'];
  if (typeof metadata['schemaVersion'] === 'number') headers['ce_schemaversion'] = String(metadata['schemaVersion']);
  return { key: executionIdOfStream(event.streamId) ?? event.streamId, value: JSON.stringify(event.data), headers };
}

/** The category of a stream: its name up to the first `-`. */
function categoryOf(streamId: string): string {
  const dash = streamId.indexOf('-');
  return dash < 0 ? streamId : streamId.slice(0, dash);
}

/** The topic an event goes to: the first rule of `kafka.topics` that takes it, else `kafka.default_topic`. */
export function topicOf(event: Pick<RecordedEvent, 'type' | 'streamId'>, config: Pick<KafkaConfig, 'routes' | 'defaultTopic'>): string {
  const category = categoryOf(event.streamId);
  for (const route of config.routes) {
    if (route.eventTypes?.includes(event.type) || route.streams?.includes(category)) return route.topic;
  }
  return config.defaultTopic;
}

/** A relayed message read back: what a consumer of the bus sees. */
export interface ReceivedCloudEvent {
  readonly id: string;
  readonly type: string;
  readonly source: string;
  readonly subject: string;
  readonly time: string;
  readonly position: number;
  readonly revision: number;
  readonly chainHash: string;
  readonly key: string;
  readonly data: unknown;
}

/** Reads a message the relay produced (kafkajs hands headers as buffers); throws when it is not one. */
export function readCloudEvent(message: { key: Buffer | string | null; value: Buffer | string | null; headers?: Record<string, unknown> }): ReceivedCloudEvent {
  const header = (name: string): string => {
    const value = message.headers?.[name];
    const text = Buffer.isBuffer(value) ? value.toString('utf8') : typeof value === 'string' ? value : undefined;
    if (text === undefined) throw new Error(`not a relayed CloudEvent: no ${name} header`);
    return text;
  };
  if (header('ce_specversion') !== '1.0') throw new Error(`not a CloudEvents 1.0 message: ce_specversion ${header('ce_specversion')}`);
  return {
    id: header('ce_id'),
    type: header('ce_type'),
    source: header('ce_source'),
    subject: header('ce_subject'),
    time: header('ce_time'),
    position: Number(header('ce_position')),
    revision: Number(header('ce_revision')),
    chainHash: header('ce_chainhash'),
    key: message.key === null ? '' : message.key.toString(),
    data: message.value === null ? null : JSON.parse(message.value.toString()),
  };
}
