import { describe, expect, it } from 'vitest';
import {
  buildOperationRecord,
  canonicalJson,
  checkFingerprintPolicy,
  EMPTY_FINGERPRINT_POLICY,
  FingerprintPolicyError,
  InvalidOperationRecordError,
  NonJsonValueError,
  redactRecord,
  type FingerprintPolicy,
  type OperationRecordInput,
} from './index';
import { catchError, deployCall, testRing } from './test-fixtures';

const ring = testRing();
const HMAC_VALUE = /^hmac-sha256:args-1:[0-9a-f]{64}$/;

function policy(overrides: Partial<FingerprintPolicy>): FingerprintPolicy {
  return { ...EMPTY_FINGERPRINT_POLICY, ...overrides };
}

describe('buildOperationRecord', () => {
  it('given the docs/design.md section 2 call, then the record has exactly the design keys and canonical form', () => {
    const record = buildOperationRecord(deployCall(), EMPTY_FINGERPRINT_POLICY, ring);

    expect(record).toEqual({
      actor: 'agent:deploy-bot',
      tool: 'deploy_release',
      channel: 'http',
      target: 'deploy-api.internal.example/releases',
      credential_ref: 'deploy-service',
      method: 'POST',
      arguments: { region: 'us-east-1', service: 'catalog', version: '2026.07.22' },
      intent_scope: 'run:5f8097',
    });
    expect(canonicalJson(record)).toBe(
      '{"actor":"agent:deploy-bot","arguments":{"region":"us-east-1","service":"catalog","version":"2026.07.22"},' +
        '"channel":"http","credential_ref":"deploy-service","intent_scope":"run:5f8097","method":"POST",' +
        '"target":"deploy-api.internal.example/releases","tool":"deploy_release"}',
    );
  });

  it('given a lowercase http method, then the record holds it uppercase', () => {
    expect(buildOperationRecord(deployCall({ method: 'put' }), EMPTY_FINGERPRINT_POLICY, ring).method).toBe('PUT');
  });

  it('given an ssh call with no credential, then method is absent and credential_ref is null', () => {
    const record = buildOperationRecord(
      deployCall({ channel: 'ssh', method: undefined, credentialRef: null }),
      EMPTY_FINGERPRINT_POLICY,
      ring,
    );

    expect('method' in record).toBe(false);
    expect(canonicalJson(record)).toContain('"credential_ref":null');
  });

  it('given a plugin channel, then a method is optional', () => {
    const record = buildOperationRecord(deployCall({ channel: 'kafka', method: undefined }), EMPTY_FINGERPRINT_POLICY, ring);

    expect(record.channel).toBe('kafka');
    expect('method' in record).toBe(false);
  });

  it('given arguments with a top-level _meta, then it is dropped, and a nested one is the tool’s own data', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { region: 'us-east-1', _meta: { progressToken: 1 }, labels: { _meta: 'kept' } } }),
      EMPTY_FINGERPRINT_POLICY,
      ring,
    );

    expect(record.arguments).toEqual({ region: 'us-east-1', labels: { _meta: 'kept' } });
  });

  it('given caller data, then building a record changes none of it and the record is frozen', () => {
    const input = deployCall({
      arguments: { region: 'us-east-1', password: 'canary-SECRET-7f3a', trace: 'x', _meta: { a: 1 } },
    });
    const rules = policy({ defaults: { 'options.dry_run': false }, exclude: ['trace'], secret: ['password'] });
    const inputBefore = structuredClone(input);
    const rulesBefore = structuredClone(rules);

    const record = buildOperationRecord(input, rules, ring);

    expect(input).toEqual(inputBefore);
    expect(rules).toEqual(rulesBefore);
    expect(Object.isFrozen(record)).toBe(true);
    expect(Object.isFrozen(record.arguments)).toBe(true);
    expect(Object.isFrozen(record.arguments['options'])).toBe(true);
  });

  it.each([
    ['an empty actor', { actor: '' }, 'actor', 'not_a_non_empty_string'],
    ['a missing tool', { tool: undefined }, 'tool', 'not_a_non_empty_string'],
    ['an empty target', { target: '' }, 'target', 'not_a_non_empty_string'],
    ['a missing intent scope', { intentScope: undefined }, 'intent_scope', 'not_a_non_empty_string'],
    ['an undefined credential', { credentialRef: undefined }, 'credential_ref', 'not_a_string_or_null'],
    ['an empty credential', { credentialRef: '' }, 'credential_ref', 'not_a_string_or_null'],
    ['an http call without method', { method: undefined }, 'method', 'method_required_for_http'],
    ['an ssh call with a method', { channel: 'ssh', method: 'POST' }, 'method', 'method_not_allowed_for_ssh'],
    ['a method with a space', { method: 'PO ST' }, 'method', 'invalid_http_method'],
    ['arguments that are an array', { arguments: ['a'] }, 'arguments', 'arguments_not_an_object'],
    ['arguments that are null', { arguments: null }, 'arguments', 'arguments_not_an_object'],
  ])('given %s, then InvalidOperationRecordError names the field', (_label, overrides, field, reason) => {
    const error = catchError(() =>
      buildOperationRecord(deployCall(overrides as Partial<OperationRecordInput>), EMPTY_FINGERPRINT_POLICY, ring),
    );

    expect(error).toBeInstanceOf(InvalidOperationRecordError);
    expect(error).toMatchObject({ kind: 'invalid_operation_record', field, reason });
  });

  it('given an argument that is not JSON, then NonJsonValueError names its path and not its value', () => {
    const error = catchError(() =>
      buildOperationRecord(deployCall({ arguments: { options: { ids: [1, Number.NaN] } } }), EMPTY_FINGERPRINT_POLICY, ring),
    );

    expect(error).toBeInstanceOf(NonJsonValueError);
    expect(error).toMatchObject({ path: 'arguments.options.ids[1]', reason: 'non_finite_number' });
  });
});

describe('fingerprint policy', () => {
  it('given defaults for absent arguments, then they are filled in, creating nested objects', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { region: 'us-east-1' } }),
      policy({ defaults: { 'options.dry_run': false, 'options.wait.seconds': 30, replicas: 1 } }),
      ring,
    );

    expect(record.arguments).toEqual({ region: 'us-east-1', replicas: 1, options: { dry_run: false, wait: { seconds: 30 } } });
  });

  it('given values present, including null, then defaults do not replace them', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { replicas: null, options: { dry_run: true } } }),
      policy({ defaults: { 'options.dry_run': false, replicas: 1 } }),
      ring,
    );

    expect(record.arguments).toEqual({ replicas: null, options: { dry_run: true } });
  });

  it('given an object default, then the record holds a copy the policy does not share', () => {
    const defaults = { labels: { team: 'core' } };
    const record = buildOperationRecord(deployCall({ arguments: {} }), policy({ defaults }), ring);

    expect(record.arguments['labels']).toEqual({ team: 'core' });
    expect(record.arguments['labels']).not.toBe(defaults.labels);
  });

  it('given excluded paths, then those arguments are removed and absent ones are ignored', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { region: 'us-east-1', trace_label: 'x', options: { timeout_ms: 5, force: true }, note: 'n' } }),
      policy({ exclude: ['trace_label', 'options.timeout_ms', 'absent', 'note.inner', 'missing.deep'] }),
      ring,
    );

    expect(record.arguments).toEqual({ region: 'us-east-1', options: { force: true }, note: 'n' });
  });

  it('given secret paths, then their values become HMACs under the argument key', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { password: 'canary-SECRET-7f3a', auth: { token: 'canary-SECRET-7f3a', user: 'u' } } }),
      policy({ secret: ['password', 'auth.token', 'absent.token'] }),
      ring,
    );

    expect(record.arguments['password']).toMatch(HMAC_VALUE);
    expect(record.arguments).toEqual({
      password: record.arguments['password'],
      auth: { token: record.arguments['password'], user: 'u' },
    });
  });

  it('given secrets nested in a secret, then the result is the same whatever order the contract lists them', () => {
    const call = deployCall({ arguments: { auth: { token: 't', user: 'u' } } });

    const one = buildOperationRecord(call, policy({ secret: ['auth', 'auth.token'] }), ring);
    const other = buildOperationRecord(call, policy({ secret: ['auth.token', 'auth'] }), ring);

    expect(one.arguments['auth']).toMatch(HMAC_VALUE);
    expect(canonicalJson(one)).toBe(canonicalJson(other));
  });

  it('given a secret path through an argument that is not an object, then it is refused rather than leaked', () => {
    const error = catchError(() =>
      buildOperationRecord(
        deployCall({ arguments: { auth: 'canary-SECRET-7f3a' } }),
        policy({ secret: ['auth.token'] }),
        ring,
      ),
    );

    expect(error).toBeInstanceOf(FingerprintPolicyError);
    expect(error).toMatchObject({ kind: 'fingerprint_policy', path: 'auth.token', reason: 'path_through_non_object' });
    expect((error as Error).message).not.toContain('canary-SECRET-7f3a');
  });

  it('given a default path through an array, then it is refused', () => {
    expect(
      catchError(() =>
        buildOperationRecord(deployCall({ arguments: { options: [] } }), policy({ defaults: { 'options.x': 1 } }), ring),
      ),
    ).toMatchObject({ path: 'options.x', reason: 'path_through_non_object' });
  });

  it.each([
    ['an empty path', policy({ exclude: [''] }), '', 'invalid_path'],
    ['an empty segment', policy({ secret: ['auth..token'] }), 'auth..token', 'invalid_path'],
    ['a trailing dot', policy({ defaults: { 'options.': 1 } }), 'options.', 'invalid_path'],
    ['a path both excluded and secret', policy({ exclude: ['pin'], secret: ['pin'] }), 'pin', 'excluded_and_secret'],
  ])('given a policy with %s, then checkFingerprintPolicy refuses it', (_label, rules, path, reason) => {
    const error = catchError(() => checkFingerprintPolicy(rules));

    expect(error).toBeInstanceOf(FingerprintPolicyError);
    expect(error).toMatchObject({ path, reason });
  });

  it('given a default that is not JSON, then checkFingerprintPolicy names it', () => {
    expect(catchError(() => checkFingerprintPolicy(policy({ defaults: { limit: Number.POSITIVE_INFINITY } })))).toMatchObject(
      { kind: 'non_json_value', path: 'defaults.limit', reason: 'non_finite_number' },
    );
  });
});

describe('redactRecord', () => {
  it('given a built record, then the stored form is an equal, detached, frozen copy with secrets already hidden', () => {
    const record = buildOperationRecord(
      deployCall({ arguments: { password: 'canary-SECRET-7f3a', region: 'us-east-1' } }),
      policy({ secret: ['password'] }),
      ring,
    );

    const stored = redactRecord(record);

    expect(stored).toEqual(record);
    expect(stored).not.toBe(record);
    expect(Object.isFrozen(stored.arguments)).toBe(true);
    expect(JSON.stringify(stored)).not.toContain('canary-SECRET-7f3a');
  });
});
