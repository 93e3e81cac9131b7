import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '@oncegate/event-store';
import { cloudEventMessage, readCloudEvent, topicOf } from './cloud-events';

const event = (streamId: string, type: string, metadata: Record<string, unknown> = {}): RecordedEvent => ({
  streamId,
  revision: 3,
  position: 1234,
  id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
  type,
  data: { n: 1, text: 'ä' },
  metadata: { actor: 'agent:ci', schemaVersion: 1, recordedAt: '2026-12-01T10:00:00.000Z', ...metadata },
  recordedAt: '2026-12-01T10:00:00.001Z',
  prev: 'p'.repeat(64),
  hash: 'h'.repeat(64),
});

describe('an event of the journal as a CloudEvents message (Kafka protocol binding, binary mode)', () => {
  it('given an execution event, then the attributes are ce_ headers, the key is the execution id and the value is the data as JSON', () => {
    const message = cloudEventMessage(event('execution-ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D3E', 'Dispatched'), '//oncegate/prod');
    expect(message).toEqual({
      key: 'ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D3E',
      value: '{"n":1,"text":"ä"}',
      headers: {
        ce_specversion: '1.0',
        ce_id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
        ce_source: '//oncegate/prod',
        ce_type: 'Dispatched',
        ce_subject: 'execution-ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D3E',
        ce_time: '2026-12-01T10:00:00.000Z',
        'content-type': 'application/json',
        ce_position: '1234',
        ce_revision: '3',
        ce_chainprev: 'p'.repeat(64),
        ce_chainhash: 'h'.repeat(64),
        ce_actor: 'agent:ci',
        ce_schemaversion: '1',
      },
    });
    expect(Object.keys(message.headers).every((name) => name === 'content-type' || /^ce_[a-z0-9]{1,20}$/.test(name))).toBe(true);
  });

  it('given an event of another stream without metadata, then the key is the stream and ce_time is the store time', () => {
    const message = cloudEventMessage({ ...event('journal-seals', 'JournalSealed'), metadata: {} }, 'oncegate');
    expect(message.key).toBe('journal-seals');
    expect(message.headers['ce_time']).toBe('2026-12-01T10:00:00.001Z');
    expect(message.headers).not.toHaveProperty('ce_actor');
  });

  it('given a message read back as a consumer gets it (headers as buffers), then it is the event again; a message without the headers is refused', () => {
    const message = cloudEventMessage(event('vault-main', 'VaultUnlocked'), 'oncegate');
    const headers = Object.fromEntries(Object.entries(message.headers).map(([name, value]) => [name, Buffer.from(value)]));
    expect(readCloudEvent({ key: Buffer.from(message.key), value: Buffer.from(message.value), headers })).toEqual({
      id: '0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b',
      type: 'VaultUnlocked',
      source: 'oncegate',
      subject: 'vault-main',
      time: '2026-12-01T10:00:00.000Z',
      position: 1234,
      revision: 3,
      chainHash: 'h'.repeat(64),
      key: 'vault-main',
      data: { n: 1, text: 'ä' },
    });
    expect(() => readCloudEvent({ key: null, value: Buffer.from('{}'), headers: {} })).toThrow(/no ce_specversion header/);
  });

  it('given topic rules, then the first rule that takes an event wins, by type or by stream category, and the rest goes to the default topic', () => {
    const config = {
      routes: [
        { topic: 'approvals', eventTypes: ['ApprovalRequested', 'ApprovalGranted'], streams: null },
        { topic: 'executions', eventTypes: null, streams: ['execution'] },
        { topic: 'vault', eventTypes: null, streams: ['vault'] },
      ],
      defaultTopic: 'all',
    };
    expect(topicOf({ type: 'ApprovalGranted', streamId: 'execution-ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D3E' }, config)).toBe('approvals');
    expect(topicOf({ type: 'Dispatched', streamId: 'execution-ex_01JZ8Q4V5W6X7Y8Z9A0B1C2D3E' }, config)).toBe('executions');
    expect(topicOf({ type: 'VaultLocked', streamId: 'vault-main' }, config)).toBe('vault');
    expect(topicOf({ type: 'RunStarted', streamId: 'run-r1' }, config)).toBe('all');
    expect(topicOf({ type: 'JournalSealed', streamId: 'journal-seals' }, { routes: [], defaultTopic: 'all' })).toBe('all');
  });
});
