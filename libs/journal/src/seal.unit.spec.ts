import { createHash, generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '@oncegate/event-store/chain';
import { planSeal, publicKeyId, SealDigest, SealPlanError, signSeal, verifySealSignature } from './seal';

const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const h = (n: number) => createHash('sha256').update(String(n)).digest('hex');
const events = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => ({ position: from + i, hash: h(from + i) }));

describe('seals', () => {
  it('given events, when planning the first seal, then it covers (0, head] chained to genesis', () => {
    const body = planSeal({ events: events(1, 3), keyId: 'k' })!;
    const expected = createHash('sha256').update(GENESIS_HASH).update(h(1)).update(h(2)).update(h(3)).digest('hex');
    expect(body).toEqual({ sealIndex: 0, fromPosition: 0, toPosition: 3, eventCount: 3, previousDigest: GENESIS_HASH, digest: expected, keyId: 'k' });
  });

  it('given a previous seal, when planning, then the next starts where it ended and skips what it covered', () => {
    const first = planSeal({ events: events(1, 3), keyId: 'k' })!;
    const second = planSeal({ previous: first, events: events(2, 6), keyId: 'k' })!;
    expect(second).toMatchObject({ sealIndex: 1, fromPosition: 3, toPosition: 6, eventCount: 3, previousDigest: first.digest });
    expect(second.digest).toBe(new SealDigest(first.digest).add(h(4)).add(h(5)).add(h(6)).digest());
  });

  it('given nothing new since the previous seal, when planning, then there is no seal', () => {
    const first = planSeal({ events: events(1, 3), keyId: 'k' })!;
    expect(planSeal({ previous: first, events: events(1, 3), keyId: 'k' })).toBeUndefined();
    expect(planSeal({ events: [], keyId: 'k' })).toBeUndefined();
  });

  it('given a gap in the positions, when planning, then it refuses with the positions', () => {
    const error = (() => {
      try {
        planSeal({ events: [...events(1, 2), ...events(4, 5)], keyId: 'k' });
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(SealPlanError);
    expect(error).toMatchObject({ expectedPosition: 3, actualPosition: 4 });
  });

  it('given a signed seal, then it verifies with the key and fails when any field or the key changes', () => {
    const body = planSeal({ events: events(1, 3), keyId: publicKeyId(publicKey) })!;
    const sealed = signSeal(body, privateKey);
    expect(verifySealSignature(sealed, publicKey)).toBe(true);
    expect(verifySealSignature({ ...sealed, toPosition: 2 }, publicKey)).toBe(false);
    expect(verifySealSignature({ ...sealed, signature: 'not base64 at all' }, publicKey)).toBe(false);
    expect(verifySealSignature(sealed, generateKeyPairSync('ed25519').publicKey)).toBe(false);
    expect(verifySealSignature({ ...sealed, extra: 1 } as typeof sealed, publicKey)).toBe(true); // only the body is signed
  });

  it('given a public key, then its id is 16 stable hex characters', () => {
    expect(publicKeyId(publicKey)).toMatch(/^[0-9a-f]{16}$/);
    expect(publicKeyId(publicKey)).toBe(publicKeyId(publicKey));
    expect(publicKeyId(generateKeyPairSync('ed25519').publicKey)).not.toBe(publicKeyId(publicKey));
  });
});
