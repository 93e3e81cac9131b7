import { describe, expect, it } from 'vitest';
import { InvalidIdentifierError } from './errors';
import {
  executionIdFromUlid,
  executionIdOfStream,
  executionStream,
  idempotencyKeyStream,
  intentStream,
  isExecutionId,
  isUlid,
  parseExecutionId,
  parseStreamName,
  runStream,
  ulidOfExecutionId,
} from './streams';
import { thrownBy } from './test-support/execution-fixtures';

const ULID = '01J3Z6Y8QK4W5X2V7N9M0P1R2S';
const DIGEST = 'ab'.repeat(32);

describe('execution ids', () => {
  it('given a ULID when made into an execution id then it is ex_ plus the ULID', () => {
    expect(executionIdFromUlid(ULID)).toBe(`ex_${ULID}`);
    expect(ulidOfExecutionId(`ex_${ULID}`)).toBe(ULID);
  });

  it('given a lower-case ULID when made into an execution id then it is normalised to upper case', () => {
    expect(executionIdFromUlid(ULID.toLowerCase())).toBe(`ex_${ULID}`);
  });

  it.each([
    ['too short', ULID.slice(1)],
    ['too long', `${ULID}0`],
    ['a letter Crockford excludes (U)', `${ULID.slice(0, 25)}U`],
    ['a timestamp beyond 48 bits (first char 8)', `8${ULID.slice(1)}`],
  ])('given a ULID that is %s when made into an execution id then a typed error is thrown', (_label, ulid) => {
    const error = thrownBy(() => executionIdFromUlid(ulid));
    expect(error).toBeInstanceOf(InvalidIdentifierError);
    expect(error).toMatchObject({ kind: 'invalid_identifier', identifier: 'ulid' });
  });

  it.each([
    [`ex_${ULID}`, true],
    [`ex_${ULID.toLowerCase()}`, false],
    [ULID, false],
    [`ex-${ULID}`, false],
    [`ex_${ULID.slice(0, 25)}I`, false],
    [42, false],
  ])('isExecutionId(%s) is %s', (value, expected) => {
    expect(isExecutionId(value)).toBe(expected);
  });

  it('isUlid accepts the canonical ULID only', () => {
    expect(isUlid(ULID)).toBe(true);
    expect(isUlid(ULID.toLowerCase())).toBe(false);
  });

  it('given a wire string that is no execution id when parsed then a typed error names the identifier', () => {
    expect(thrownBy(() => parseExecutionId('ex_123'))).toMatchObject({ identifier: 'execution_id' });
  });
});

describe('stream names', () => {
  it('given an execution id when its stream is named then it is execution-<id> and parses back', () => {
    const name = executionStream(`ex_${ULID}`);
    expect(name).toBe(`execution-ex_${ULID}`);
    expect(parseStreamName(name)).toEqual({ category: 'execution', executionId: `ex_${ULID}` });
    expect(executionIdOfStream(name)).toBe(`ex_${ULID}`);
  });

  it('given a malformed execution id when its stream is named then it is refused', () => {
    expect(thrownBy(() => executionStream('ex_nope'))).toBeInstanceOf(InvalidIdentifierError);
  });

  it('given a fingerprint when its intent stream is named then it is intent-<key-id>-<hex> and parses back', () => {
    const fingerprint = `hmac-sha256:k-2026-1:${DIGEST}` as const;
    expect(intentStream(fingerprint)).toBe(`intent-k-2026-1-${DIGEST}`);
    expect(parseStreamName(`intent-k-2026-1-${DIGEST}`)).toEqual({
      category: 'intent',
      fingerprintDigest: `k-2026-1-${DIGEST}`,
    });
  });

  it.each(['hmac-sha256:k1:abab', DIGEST, `hmac-sha256:K1:${DIGEST}`])(
    'given %s instead of a fingerprint when the intent stream is named then it is refused',
    (value) => {
      expect(thrownBy(() => intentStream(value as never))).toMatchObject({ identifier: 'fingerprint_digest' });
    },
  );

  it('given an actor, tool and key digest when the key stream is named then the free-form parts are encoded', () => {
    const name = idempotencyKeyStream('agent:deploy-bot', 'deploy_release', DIGEST);
    expect(name).toBe(`idempotency-agent%3Adeploy-bot/deploy_release/${DIGEST}`);
    expect(parseStreamName(name)).toEqual({
      category: 'idempotency',
      actor: 'agent:deploy-bot',
      tool: 'deploy_release',
      keyDigest: DIGEST,
    });
  });

  it('given an actor containing the separator when the key stream is named then it still parses back exactly', () => {
    const name = idempotencyKeyStream('agent:a/b', 'tool/x', DIGEST);
    expect(parseStreamName(name)).toMatchObject({ actor: 'agent:a/b', tool: 'tool/x' });
  });

  it('given a raw key instead of a digest when the key stream is named then it is refused', () => {
    expect(thrownBy(() => idempotencyKeyStream('agent:a', 'tool', 'order-123'))).toMatchObject({
      identifier: 'idempotency_key_digest',
    });
  });

  it('given an empty actor when the key stream is named then it is refused', () => {
    expect(thrownBy(() => idempotencyKeyStream('', 'tool', DIGEST))).toMatchObject({ identifier: 'actor' });
  });

  it('given a run id when its stream is named then it is run-<id> and parses back', () => {
    expect(runStream('5f8097')).toBe('run-5f8097');
    expect(parseStreamName(runStream('client run/1'))).toEqual({ category: 'run', runId: 'client run/1' });
  });

  it.each([
    'execution-ex_123',
    'intent-XYZ',
    'idempotency-a/b',
    'idempotency-a/b/c/d',
    'run-%E0%A4%A',
    'run-a b',
    'payments-123',
    'execution',
    '-x',
  ])('given the foreign name %s when parsed then it is not recognised', (name) => {
    expect(parseStreamName(name)).toBeUndefined();
  });

  it('given a non-execution stream when asked for its execution id then there is none', () => {
    expect(executionIdOfStream(runStream('r1'))).toBeUndefined();
  });
});
