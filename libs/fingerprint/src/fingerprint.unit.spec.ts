import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  buildOperationRecord,
  candidateFingerprints,
  canonicalJson,
  EMPTY_FINGERPRINT_POLICY,
  fingerprint,
  fingerprintDigest,
  InvalidFingerprintError,
  parseFingerprint,
  type FingerprintPolicy,
  type KeyRing,
  type OperationRecordInput,
} from './index';
import { catchError, deployCall, SECRETS, testRing } from './test-fixtures';

const ring = testRing();
const CANARY = 'canary-SECRET-7f3a';

/** A `tools/call` as it arrives: protocol correlation around the call's effect. */
interface ToolCallRequest {
  readonly jsonrpc: '2.0';
  readonly id: number | string;
  readonly sessionId: string;
  readonly receivedAt: string;
  readonly params: { readonly name: string; readonly arguments: Record<string, unknown> };
}

function fingerprintOfCall(
  request: ToolCallRequest,
  policy: FingerprintPolicy = EMPTY_FINGERPRINT_POLICY,
  keys: KeyRing = ring,
): string {
  // Everything a gateway handler holds, passed as is: the builder must pick only the record's fields.
  const input: OperationRecordInput & Record<string, unknown> = {
    ...deployCall({ tool: request.params.name, arguments: request.params.arguments }),
    jsonRpcId: request.id,
    sessionId: request.sessionId,
    receivedAt: request.receivedAt,
  };
  return fingerprint(buildOperationRecord(input, policy, keys), keys);
}

function deployRequest(overrides: Partial<ToolCallRequest> = {}): ToolCallRequest {
  return {
    jsonrpc: '2.0',
    id: 1,
    sessionId: 'session-a',
    receivedAt: '2026-07-22T10:00:00Z',
    params: { name: 'deploy_release', arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' } },
    ...overrides,
  };
}

function fingerprintOf(overrides: Partial<OperationRecordInput>, policy = EMPTY_FINGERPRINT_POLICY): string {
  return fingerprint(buildOperationRecord(deployCall(overrides), policy, ring), ring);
}

describe('fingerprint', () => {
  it('given a record, then the fingerprint is HMAC-SHA256 under the current key over the canonical JSON', () => {
    const record = buildOperationRecord(deployCall(), EMPTY_FINGERPRINT_POLICY, ring);
    const expected = createHmac('sha256', Buffer.from(SECRETS.new, 'hex')).update(canonicalJson(record)).digest('hex');

    expect(fingerprint(record, ring)).toBe(`hmac-sha256:fp-new:${expected}`);
  });

  describe('does not change with what is not the intent', () => {
    const baseline = fingerprintOfCall(deployRequest());

    it('given the arguments in another key order, at every level, then the fingerprint is the same', () => {
      const a = deployCall({ arguments: { region: 'us-east-1', options: { force: true, wait: 30 }, service: 'catalog' } });
      const b = deployCall({ arguments: { service: 'catalog', options: { wait: 30, force: true }, region: 'us-east-1' } });

      expect(fingerprint(buildOperationRecord(a, EMPTY_FINGERPRINT_POLICY, ring), ring)).toBe(
        fingerprint(buildOperationRecord(b, EMPTY_FINGERPRINT_POLICY, ring), ring),
      );
    });

    it('given the same arguments in differently formatted JSON text, then the fingerprint is the same', () => {
      const compact = '{"region":"us-east-1","service":"catalog","version":"2026.07.22","replicas":2}';
      const spaced = '{\n  "version" : "2026.07.22",\r\n\t"replicas": 2.0,\n  "service":"catalog" , "region":"us-east-1"\n}\n';

      expect(fingerprintOf({ arguments: JSON.parse(spaced) })).toBe(fingerprintOf({ arguments: JSON.parse(compact) }));
    });

    it('given another JSON-RPC id, then the fingerprint is the same', () => {
      expect(fingerprintOfCall(deployRequest({ id: 2 }))).toBe(baseline);
      expect(fingerprintOfCall(deployRequest({ id: 'c5b0e0a4' }))).toBe(baseline);
    });

    it('given another MCP session id, then the fingerprint is the same', () => {
      expect(fingerprintOfCall(deployRequest({ sessionId: 'session-after-restart' }))).toBe(baseline);
    });

    it('given another receive time, then the fingerprint is the same', () => {
      expect(fingerprintOfCall(deployRequest({ receivedAt: '2026-07-22T10:05:00Z' }))).toBe(baseline);
    });

    it('given a _meta in the arguments, then the fingerprint is the same as without it', () => {
      const withMeta = deployRequest({
        params: {
          name: 'deploy_release',
          arguments: {
            region: 'us-east-1',
            service: 'catalog',
            version: '2026.07.22',
            _meta: { progressToken: 42, 'io.oncegate/run': 'r-9' },
          },
        },
      });

      expect(fingerprintOfCall(withMeta)).toBe(baseline);
    });

    it('given a default written out or omitted, then the fingerprint is the same', () => {
      const policy = { ...EMPTY_FINGERPRINT_POLICY, defaults: { replicas: 2, 'options.dry_run': false } };
      const omitted = fingerprintOf({ arguments: { region: 'us-east-1' } }, policy);

      expect(fingerprintOf({ arguments: { region: 'us-east-1', replicas: 2 } }, policy)).toBe(omitted);
      expect(fingerprintOf({ arguments: { region: 'us-east-1', options: {} } }, policy)).toBe(omitted);
      expect(fingerprintOf({ arguments: { region: 'us-east-1', replicas: 2, options: { dry_run: false } } }, policy)).toBe(
        omitted,
      );
      expect(fingerprintOf({ arguments: { region: 'us-east-1', replicas: 3 } }, policy)).not.toBe(omitted);
    });

    it('given an excluded argument with another value or absent, then the fingerprint is the same', () => {
      const policy = { ...EMPTY_FINGERPRINT_POLICY, exclude: ['trace_label', 'options.timeout_ms'] };
      const base = fingerprintOf({ arguments: { region: 'us-east-1', options: { timeout_ms: 1 } } }, policy);

      expect(fingerprintOf({ arguments: { region: 'us-east-1', options: { timeout_ms: 99 } } }, policy)).toBe(base);
      expect(
        fingerprintOf({ arguments: { region: 'us-east-1', trace_label: 'retry 2', options: { timeout_ms: 1 } } }, policy),
      ).toBe(base);
    });
  });

  describe('changes with every part of the intent', () => {
    const baseline = fingerprintOf({});

    it.each([
      ['region', 'eu-west-1'],
      ['service', 'search'],
      ['version', '2026.07.23'],
    ])('given another value of the argument %s, then the fingerprint differs', (name, value) => {
      const args = { region: 'us-east-1', service: 'catalog', version: '2026.07.22', [name]: value };

      expect(fingerprintOf({ arguments: args })).not.toBe(baseline);
    });

    it('given an argument added or removed, then the fingerprint differs', () => {
      expect(fingerprintOf({ arguments: { region: 'us-east-1', service: 'catalog' } })).not.toBe(baseline);
      expect(
        fingerprintOf({ arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22', force: true } }),
      ).not.toBe(baseline);
    });

    it('given the same value with another JSON type, then the fingerprint differs', () => {
      expect(fingerprintOf({ arguments: { replicas: 2 } })).not.toBe(fingerprintOf({ arguments: { replicas: '2' } }));
    });

    it.each<[string, Partial<OperationRecordInput>]>([
      ['actor', { actor: 'agent:other-bot' }],
      ['credential_ref', { credentialRef: 'deploy-service-readonly' }],
      ['credential_ref null', { credentialRef: null }],
      ['tool', { tool: 'deploy_release_v2' }],
      ['target', { target: 'deploy-api.staging.example/releases' }],
      ['method', { method: 'PUT' }],
      ['intent_scope (another run)', { intentScope: 'run:77aa01' }],
      ['intent_scope (a caller key)', { intentScope: 'key:release-2026.07.22' }],
      ['intent_scope (actor-wide)', { intentScope: 'actor' }],
      ['channel', { channel: 'grpc' }],
    ])('given another %s, then the fingerprint differs', (_label, overrides) => {
      expect(fingerprintOf(overrides)).not.toBe(baseline);
    });
  });

  describe('secrets', () => {
    const policy = { ...EMPTY_FINGERPRINT_POLICY, secret: ['password', 'auth.otp'] };
    const call = deployCall({
      tool: 'rotate_credential',
      arguments: { account: 'svc-billing', password: CANARY, auth: { otp: { code: CANARY } } },
    });

    it('given a secret argument, then its value appears nowhere in the record, its canonical JSON or the MAC input', () => {
      const record = buildOperationRecord(call, policy, ring);
      const canonical = canonicalJson(record);

      expect(canonical).not.toContain(CANARY);
      expect(canonical).not.toContain(Buffer.from(CANARY).toString('hex'));
      expect(JSON.stringify(record)).not.toContain(CANARY);
      // The MAC input is exactly the canonical JSON checked above.
      const mac = createHmac('sha256', Buffer.from(SECRETS.new, 'hex')).update(canonical).digest('hex');
      expect(fingerprint(record, ring)).toBe(`hmac-sha256:fp-new:${mac}`);
    });

    it('given another secret value, then the fingerprint differs', () => {
      const other = deployCall({ ...call, arguments: { account: 'svc-billing', password: 'x', auth: { otp: { code: CANARY } } } });

      expect(fingerprint(buildOperationRecord(other, policy, ring), ring)).not.toBe(
        fingerprint(buildOperationRecord(call, policy, ring), ring),
      );
    });

    it('given the same secret under different argument keys, then the hidden values and fingerprints differ', () => {
      const otherSecret = testRing({ argumentKey: { id: 'args-1', secret: SECRETS.otherArgs } });
      const otherId = testRing({ argumentKey: { id: 'args-2', secret: SECRETS.otherArgs } });

      const record = buildOperationRecord(call, policy, ring);
      const underOtherSecret = buildOperationRecord(call, policy, otherSecret);
      const underOtherId = buildOperationRecord(call, policy, otherId);

      expect(underOtherSecret.arguments['password']).not.toBe(record.arguments['password']);
      expect(underOtherId.arguments['password']).toMatch(/^hmac-sha256:args-2:/);
      expect(fingerprint(underOtherSecret, ring)).not.toBe(fingerprint(record, ring));
    });

    it('given the argument key, then the hidden value is not a MAC under any fingerprint key', () => {
      const record = buildOperationRecord(call, policy, ring);
      const hidden = String(record.arguments['password']).split(':')[2];
      const underFingerprintKey = createHmac('sha256', Buffer.from(SECRETS.new, 'hex'))
        .update(JSON.stringify(CANARY))
        .digest('hex');
      const underArgumentKey = createHmac('sha256', Buffer.from(SECRETS.args, 'hex'))
        .update(JSON.stringify(CANARY))
        .digest('hex');

      expect(hidden).not.toBe(underFingerprintKey);
      expect(hidden).toBe(underArgumentKey);
    });
  });
});

describe('candidateFingerprints during key rotation', () => {
  const call = deployCall();
  const beforeRotation = testRing({
    current: 'fp-old',
    keys: [{ id: 'fp-old', secret: SECRETS.old }],
  });
  const duringRotation = testRing({
    current: 'fp-new',
    keys: [
      { id: 'fp-new', secret: SECRETS.new },
      { id: 'fp-old', secret: SECRETS.old, state: 'verify_only' },
    ],
  });
  const afterRetirement = testRing({
    current: 'fp-next',
    keys: [
      { id: 'fp-next', secret: SECRETS.next },
      { id: 'fp-new', secret: SECRETS.new, state: 'verify_only' },
    ],
  });

  it('given an execution claimed under the old key, when the current key changed, then a look-up still finds it', () => {
    const claimed = fingerprint(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, beforeRotation), beforeRotation);

    const candidates = candidateFingerprints(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, duringRotation), duringRotation);

    expect(candidates).toHaveLength(2);
    expect(candidates[0]).toBe(fingerprint(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, duringRotation), duringRotation));
    expect(parseFingerprint(candidates[0]).keyId).toBe('fp-new');
    expect(candidates).toContain(claimed);
  });

  it('given the old key was removed from the ring, then it is no longer tried', () => {
    const claimed = fingerprint(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, beforeRotation), beforeRotation);

    const candidates = candidateFingerprints(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, afterRetirement), afterRetirement);

    expect(candidates.map((candidate) => parseFingerprint(candidate).keyId)).toEqual(['fp-next', 'fp-new']);
    expect(candidates).not.toContain(claimed);
  });

  it('given two active keys, then both are tried with the current one first', () => {
    const twoActive = testRing({
      current: 'fp-new',
      keys: [
        { id: 'fp-old', secret: SECRETS.old },
        { id: 'fp-new', secret: SECRETS.new },
      ],
    });

    const candidates = candidateFingerprints(buildOperationRecord(call, EMPTY_FINGERPRINT_POLICY, twoActive), twoActive);

    expect(candidates.map((candidate) => parseFingerprint(candidate).keyId)).toEqual(['fp-new', 'fp-old']);
  });
});

describe('parseFingerprint and fingerprintDigest', () => {
  const value = fingerprintOf({});

  it('given a fingerprint, then it parses into algorithm, key id and hex', () => {
    expect(parseFingerprint(value)).toEqual({ algorithm: 'hmac-sha256', keyId: 'fp-new', hex: value.slice(19) });
  });

  it('given a fingerprint, then its digest is <key-id>-<hex>, stable and safe in a stream name', () => {
    const digest = fingerprintDigest(value);

    expect(digest).toBe(`fp-new-${value.slice(19)}`);
    expect(digest).toMatch(/^[a-z0-9-]+$/);
    expect(fingerprintDigest(fingerprintOf({}))).toBe(digest);
  });

  it.each([
    ['another algorithm', value.replace('hmac-sha256', 'sha256')],
    ['uppercase hex', value.toUpperCase()],
    ['a short hex part', value.slice(0, -1)],
    ['a long hex part', `${value}0`],
    ['an invalid key id', value.replace('fp-new', 'FP_NEW')],
    ['an empty key id', value.replace('fp-new', '')],
    ['an extra part', `${value}:x`],
    ['surrounding whitespace', ` ${value}`],
    ['an empty string', ''],
  ])('given %s, then InvalidFingerprintError says it is malformed', (_label, malformed) => {
    const error = catchError(() => parseFingerprint(malformed));

    expect(error).toBeInstanceOf(InvalidFingerprintError);
    expect(error).toMatchObject({ kind: 'invalid_fingerprint', reason: 'malformed' });
    expect(() => fingerprintDigest(malformed)).toThrow(InvalidFingerprintError);
  });

  it('given a value that is not a string, then InvalidFingerprintError says so', () => {
    expect(catchError(() => parseFingerprint(42))).toMatchObject({ reason: 'not_a_string', value: '<number>' });
  });
});
