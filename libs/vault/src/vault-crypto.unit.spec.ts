import { describe, expect, it } from 'vitest';
import { DEFAULT_KDF, deriveKek, newDataKey, newSalt, open, seal } from './vault-crypto';
import { credentialMetadata, metadataAad } from './vault-entry';

/** A cheap derivation for tests of the envelope; the vault itself uses DEFAULT_KDF. */
const FAST_KDF = { ...DEFAULT_KDF, N: 2 ** 10 };

describe('vault envelope encryption', () => {
  const metadata = credentialMetadata({ ref: 'demo-writer', kind: 'bearer', bindings: ['127.0.0.1:8790/config'] }, 1);

  it('given a value sealed under a data key wrapped by a master key, when both are opened, then the value comes back', async () => {
    const salt = newSalt();
    const dataKey = newDataKey();
    const wrapped = seal(await deriveKek('master key one', salt, FAST_KDF), dataKey, Buffer.from('key-aad'));
    const sealed = seal(dataKey, Buffer.from('s3cret-value'), metadataAad(metadata));
    expect(sealed.ciphertext.includes(Buffer.from('s3cret-value'))).toBe(false);

    const reopened = open(await deriveKek('master key one', salt, FAST_KDF), wrapped, Buffer.from('key-aad'));
    expect(reopened?.equals(dataKey)).toBe(true);
    expect(open(reopened!, sealed, metadataAad(metadata))?.toString()).toBe('s3cret-value');
  });

  it('given another master key, when the data key is opened, then it does not open', async () => {
    const salt = newSalt();
    const wrapped = seal(await deriveKek('master key one', salt, FAST_KDF), newDataKey(), Buffer.from('key-aad'));
    expect(open(await deriveKek('master key two', salt, FAST_KDF), wrapped, Buffer.from('key-aad'))).toBeUndefined();
  });

  it('given metadata changed after sealing (a binding, the kind, the version), when the value is opened, then it does not authenticate', () => {
    const dataKey = newDataKey();
    const sealed = seal(dataKey, Buffer.from('s3cret-value'), metadataAad(metadata));
    for (const changed of [
      { ...metadata, bindings: ['10.0.0.5'] },
      { ...metadata, kind: 'header' as const, header: 'X-Api-Key' },
      { ...metadata, version: 2 },
      { ...metadata, approval: 'per_use' as const },
    ]) {
      expect(open(dataKey, sealed, metadataAad(changed))).toBeUndefined();
    }
  });

  it('given one flipped ciphertext byte, when opened, then it does not authenticate', () => {
    const dataKey = newDataKey();
    const sealed = seal(dataKey, Buffer.from('s3cret-value'), metadataAad(metadata));
    const ciphertext = Buffer.from(sealed.ciphertext);
    ciphertext[0] = ciphertext[0]! ^ 1;
    expect(open(dataKey, { ...sealed, ciphertext }, metadataAad(metadata))).toBeUndefined();
  });

  it('given the same metadata written with its keys in another order, when canonicalised, then the AAD is the same', () => {
    const reordered = { version: 1, approval: 'none', bindings: ['127.0.0.1:8790/config'], username: null, scheme: null, header: null, kind: 'bearer', ref: 'demo-writer' } as const;
    expect(metadataAad(reordered).equals(metadataAad(metadata))).toBe(true);
  });
});
