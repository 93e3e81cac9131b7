import { describe, expect, it } from 'vitest';
import { EXECUTION_COMMAND_TYPES } from './commands';
import { addMs, epochMsOf, isBefore, isDurationMs, isIsoInstant } from './durations';
import {
  EXECUTION_EVENT_TYPES,
  executionEvent,
  formatIntentScope,
  isExecutionEventType,
  isUuidV7,
} from './events';
import { isFingerprint } from './fingerprint-value';
import { OPERATION_CLASSES, recoveryPolicyOf } from './operation-class';

describe('execution events', () => {
  it('lists every event of docs/design.md section 4, in order', () => {
    expect(EXECUTION_EVENT_TYPES).toEqual([
      'ExecutionAccepted',
      'RetryAttached',
      'ApprovalRequested',
      'ApprovalGranted',
      'ApprovalDenied',
      'ExecutionAuthorized',
      'ExecutionDenied',
      'Dispatched',
      'AttemptProgressed',
      'AttemptTaskStarted',
      'OutcomeObserved',
      'OutcomeUnknown',
      'AttemptTaskChecked',
      'StatusQueried',
      'MarkerProbed',
      'ReviewRequired',
      'ReviewResolved',
      'ResultDelivered',
      'ResultDeliveryFailed',
      'AnswerGiven',
      'ExecutionCancelled',
      'CancellationRequested',
      'ExecutionExpired',
    ]);
  });

  it('recognises event types and nothing else', () => {
    expect(isExecutionEventType('Dispatched')).toBe(true);
    expect(isExecutionEventType('toString')).toBe(false);
    expect(isExecutionEventType('dispatched')).toBe(false);
  });

  it('builds an event with the current schema version of its type', () => {
    expect(
      executionEvent('OutcomeUnknown', { attempt: 1, reason: 'connection_reset', observedAt: '2026-07-22T10:00:00Z' }),
    ).toEqual({
      type: 'OutcomeUnknown',
      schemaVersion: 1,
      data: { attempt: 1, reason: 'connection_reset', observedAt: '2026-07-22T10:00:00Z' },
    });
  });

  it('formats each intent scope as the canonical record spells it', () => {
    expect(formatIntentScope({ kind: 'key', key: 'order-7', source: 'caller' })).toBe('key:order-7');
    expect(formatIntentScope({ kind: 'run', runId: '5f8097' })).toBe('run:5f8097');
    expect(formatIntentScope({ kind: 'actor' })).toBe('actor');
  });

  it('accepts lower-case version-7 UUIDs only as event ids', () => {
    expect(isUuidV7('01890a5d-ac96-774b-bcce-b302099a8057')).toBe(true);
    expect(isUuidV7('01890a5d-ac96-474b-bcce-b302099a8057')).toBe(false);
    expect(isUuidV7('01890A5D-AC96-774B-BCCE-B302099A8057')).toBe(false);
  });

  it('names commands apart from events, so a command is never mistaken for a fact', () => {
    expect(EXECUTION_COMMAND_TYPES).toHaveLength(23);
    expect(EXECUTION_COMMAND_TYPES.filter((type) => (EXECUTION_EVENT_TYPES as readonly string[]).includes(type))).toEqual(
      [],
    );
  });
});

describe('fingerprint values', () => {
  it('given hmac-sha256:<key-id>:<hex> when checked then it is a fingerprint', () => {
    const digest = 'ab'.repeat(32);
    expect(isFingerprint(`hmac-sha256:k-2026-1:${digest}`)).toBe(true);
    expect(isFingerprint(`hmac-sha256:k1:${digest}`)).toBe(true);
  });

  it.each(['sha256:abc', `hmac-sha256::${'ab'.repeat(32)}`, `hmac-sha256:k1:${'AB'.repeat(32)}`, 'hmac-sha256:k1:abc'])(
    'given %s when parsed then it is not a fingerprint',
    (value) => {
      expect(isFingerprint(value)).toBe(false);
    },
  );
});

describe('instants and durations', () => {
  it('adds milliseconds and writes UTC', () => {
    expect(addMs('2026-07-22T10:00:00.000Z', 90_000)).toBe('2026-07-22T10:01:30.000Z');
    expect(addMs('2026-07-22T12:00:00+02:00', 1)).toBe('2026-07-22T10:00:00.001Z');
  });

  it('compares instants written in different zones by the moment they name', () => {
    expect(isBefore('2026-07-22T11:59:59+02:00', '2026-07-22T10:00:00Z')).toBe(true);
    expect(isBefore('2026-07-22T10:00:00Z', '2026-07-22T12:00:00+02:00')).toBe(false);
    expect(epochMsOf('1970-01-01T00:00:01Z')).toBe(1_000);
  });

  it.each([
    ['2026-07-22T10:00:00Z', true],
    ['2026-07-22T10:00:00.123456+05:30', true],
    ['2026-07-22T10:00:00', false],
    ['2026-07-22', false],
    ['2026-13-45T10:00:00Z', false],
    [1_753_000_000_000, false],
  ])('isIsoInstant(%s) is %s', (value, expected) => {
    expect(isIsoInstant(value)).toBe(expected);
  });

  it.each([
    [0, true],
    [60_000, true],
    [-1, false],
    [1.5, false],
    [Number.POSITIVE_INFINITY, false],
    ['60000', false],
  ])('isDurationMs(%s) is %s', (value, expected) => {
    expect(isDurationMs(value)).toBe(expected);
  });
});

describe('operation classes', () => {
  it('derive MCP annotations from the class (docs/design.md section 7)', () => {
    const hints = Object.fromEntries(OPERATION_CLASSES.map((c) => [c, recoveryPolicyOf(c).annotations]));
    expect(hints['read_only']).toMatchObject({ readOnlyHint: true });
    expect(hints['idempotent_write']).toMatchObject({ readOnlyHint: false, idempotentHint: true });
    expect(hints['irreversible']).toMatchObject({ destructiveHint: true });
    expect(hints['remote_command']).toMatchObject({ destructiveHint: true });
  });

  it('only irreversible operations may never be re-dispatched', () => {
    expect(OPERATION_CLASSES.filter((c) => !recoveryPolicyOf(c).mayRedispatch)).toEqual(['irreversible']);
  });
});
