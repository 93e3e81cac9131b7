import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import {
  buildOperationRecord,
  EMPTY_FINGERPRINT_POLICY,
  fingerprint,
  InvalidKeyIdError,
  InvalidKeyRingError,
  InvalidKeySecretError,
  KeyRing,
  keyRingFromConfig,
  type KeyRingConfig,
} from './index';
import { catchError, deployCall, ringConfig, SECRETS, testRing } from './test-fixtures';

describe('keyRingFromConfig', () => {
  it('given a valid configuration, then the ring lists its keys without secrets and looks up current first', () => {
    const ring = testRing({
      current: 'fp-new',
      keys: [
        { id: 'fp-old', secret: SECRETS.old, state: 'verify_only' },
        { id: 'fp-new', secret: SECRETS.new },
      ],
    });

    expect(ring).toBeInstanceOf(KeyRing);
    expect(ring.current).toBe('fp-new');
    expect(ring.keys).toEqual([
      { id: 'fp-old', state: 'verify_only' },
      { id: 'fp-new', state: 'active' },
    ]);
    expect(ring.lookupOrder).toEqual(['fp-new', 'fp-old']);
    expect(ring.argumentKeyId).toBe('args-1');
  });

  it('given secrets as bytes, then they are accepted like hex', () => {
    const fromHex = testRing();
    const fromBytes = testRing({
      keys: [
        { id: 'fp-new', secret: new Uint8Array(Buffer.from(SECRETS.new, 'hex')) },
        { id: 'fp-old', secret: Buffer.from(SECRETS.old, 'hex'), state: 'verify_only' },
      ],
      argumentKey: { id: 'args-1', secret: Buffer.from(SECRETS.args, 'hex') },
    });
    const record = buildOperationRecord(deployCall(), EMPTY_FINGERPRINT_POLICY, fromHex);

    expect(fingerprint(record, fromBytes)).toBe(fingerprint(record, fromHex));
  });

  it('given the caller changes its secret buffer afterwards, then the ring is unaffected', () => {
    const secret = Buffer.from(SECRETS.new, 'hex');
    const ring = testRing({ keys: [{ id: 'fp-new', secret }] });
    const record = buildOperationRecord(deployCall(), EMPTY_FINGERPRINT_POLICY, ring);
    const before = fingerprint(record, ring);

    secret.fill(0);

    expect(fingerprint(record, ring)).toBe(before);
  });

  it('given a ring, when serialised or inspected, then no secret shows', () => {
    const ring = testRing();
    const shown = JSON.stringify(ring) + inspect(ring, { depth: 10, showHidden: true });

    for (const secret of Object.values(SECRETS)) expect(shown).not.toContain(secret);
    expect(shown).not.toContain(Buffer.from(SECRETS.new, 'hex').toString('latin1'));
  });

  it.each([
    ['an uppercase id', { keys: [{ id: 'FP-1', secret: SECRETS.new }], current: 'FP-1' }, 'keys[0].id', 'FP-1'],
    ['an empty id', { keys: [{ id: '', secret: SECRETS.new }] }, 'keys[0].id', ''],
    ['an id with a colon', { keys: [{ id: 'fp:1', secret: SECRETS.new }] }, 'keys[0].id', 'fp:1'],
    ['an id of 33 characters', { keys: [{ id: 'a'.repeat(33), secret: SECRETS.new }] }, 'keys[0].id', '<33 characters>'],
    ['a current id that is no id', { current: 'Fp New' }, 'current', 'Fp New'],
    ['an argument key id with a dot', { argumentKey: { id: 'args.1', secret: SECRETS.args } }, 'argumentKey.id', 'args.1'],
  ])('given %s, then InvalidKeyIdError names the field', (_label, overrides, field, keyId) => {
    expect(() => testRing(overrides as Partial<KeyRingConfig>)).toThrow(InvalidKeyIdError);
    expect(catchError(() => testRing(overrides as Partial<KeyRingConfig>))).toMatchObject({
      kind: 'invalid_key_id',
      field,
      keyId,
    });
  });

  it('given a secret pasted into an id field, then the error does not repeat it', () => {
    const error = catchError(() => testRing({ keys: [{ id: SECRETS.new, secret: SECRETS.new }] }));

    expect(error).toBeInstanceOf(InvalidKeyIdError);
    expect(String((error as Error).message)).not.toContain(SECRETS.new);
  });

  it.each([
    ['31 bytes', SECRETS.new.slice(0, 62), 'too_short', 31],
    ['an empty buffer', new Uint8Array(0), 'too_short', 0],
    ['a string that is not hex', 'z'.repeat(64), 'not_hex', 0],
    ['an odd number of hex digits', `${SECRETS.new}a`, 'not_hex', 0],
    ['a number', 42, 'not_bytes', 0],
  ])('given a secret of %s, then InvalidKeySecretError gives the facts without the secret', (_l, secret, reason, length) => {
    const error = catchError(() => testRing({ keys: [{ id: 'fp-new', secret: secret as string }] }));

    expect(error).toBeInstanceOf(InvalidKeySecretError);
    expect(error).toMatchObject({ kind: 'invalid_key_secret', keyId: 'fp-new', reason, length, minimumLength: 32 });
    if (typeof secret === 'string' && secret.length > 0) expect((error as Error).message).not.toContain(secret);
  });

  it('given a short argument key secret, then it is refused too', () => {
    expect(catchError(() => testRing({ argumentKey: { id: 'args-1', secret: '00'.repeat(16) } }))).toMatchObject({
      kind: 'invalid_key_secret',
      keyId: 'args-1',
      reason: 'too_short',
      length: 16,
    });
  });

  it.each([
    ['no keys', { keys: [] }, 'no_keys', undefined],
    [
      'a duplicate key id',
      { keys: [{ id: 'fp-new', secret: SECRETS.new }, { id: 'fp-new', secret: SECRETS.old }] },
      'duplicate_key_id',
      'fp-new',
    ],
    ['a current key not in the ring', { current: 'fp-gone' }, 'unknown_current_key', 'fp-gone'],
    ['a verify-only current key', { current: 'fp-old' }, 'current_key_not_active', 'fp-old'],
    [
      'an unknown key state',
      { keys: [{ id: 'fp-new', secret: SECRETS.new, state: 'retired' }] },
      'invalid_key_state',
      'fp-new',
    ],
    [
      'an argument key sharing a fingerprint key id',
      { argumentKey: { id: 'fp-old', secret: SECRETS.args } },
      'argument_key_not_separate',
      'fp-old',
    ],
    [
      'an argument key sharing a fingerprint key secret',
      { argumentKey: { id: 'args-1', secret: SECRETS.old } },
      'argument_key_not_separate',
      'args-1',
    ],
  ])('given %s, then InvalidKeyRingError says why', (_label, overrides, reason, keyId) => {
    const error = catchError(() => keyRingFromConfig(ringConfig(overrides as Partial<KeyRingConfig>)));

    expect(error).toBeInstanceOf(InvalidKeyRingError);
    expect(error).toMatchObject({ kind: 'invalid_key_ring', reason, keyId });
  });
});
