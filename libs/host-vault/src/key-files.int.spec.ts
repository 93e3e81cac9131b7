import { randomBytes } from 'node:crypto';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSealedStore } from '@oncegate/sealed-store';
import { DEFAULT_KDF, DEVELOPMENT_KDF } from '@oncegate/vault';
import { KeyFileError, loadGatewayKeys } from './key-files';

const MASTER = { ONCEGATE_MASTER_KEY: 'a master key for the key file tests' };
const SECRET_ARGUMENT = '{"api_token":"secret-argument-5e0c9a17"}';

/** Seals one call's arguments into the folder's store with `key`, as the gateway does; returns the blob's ref. */
async function sealArguments(dataDir: string, key: Buffer): Promise<string> {
  const sealed = new SqliteSealedStore({ file: join(dataDir, 'events.db'), current: { id: 'seal1', key } });
  try {
    return (await sealed.seal('arguments', 'ex_01JZ8Q3W5V6X7Y8Z9A0B1C2D3E', Buffer.from(SECRET_ARGUMENT))).ref;
  } finally {
    await sealed.close();
  }
}

/** Opens a sealed blob with `key`; `undefined` when that key does not open it. */
async function openWith(dataDir: string, key: Buffer, ref: string): Promise<string | undefined> {
  const sealed = new SqliteSealedStore({ file: join(dataDir, 'events.db'), current: { id: 'seal1', key } });
  try {
    return (await sealed.open(ref))?.plaintext.toString('utf8');
  } catch {
    return undefined;
  } finally {
    await sealed.close();
  }
}

/** Every 32-byte key a copy of the folder gives away to whoever reads its key files: hex text, or raw bytes. */
function keysReadableFrom(dataDir: string): Buffer[] {
  const keysDir = join(dataDir, 'keys');
  return readdirSync(keysDir).flatMap((name) => {
    const bytes = readFileSync(join(keysDir, name));
    const text = bytes.toString('utf8').trim();
    return [...(/^[0-9a-f]{64}$/.test(text) ? [Buffer.from(text, 'hex')] : []), ...(bytes.length === 32 ? [bytes] : [])];
  });
}

describe('the key files (keys/*.key, real SQLite sealed store)', () => {
  let dataDir: string;
  let copy: string;

  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'oncegate-keys-'));
    copy = mkdtempSync(join(tmpdir(), 'oncegate-keys-copy-'));
  });

  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(copy, { recursive: true, force: true });
  });

  it('given a fresh data folder, when the keys are made, then the sealing key file holds the key wrapped, not in plain, owner-only', async () => {
    const { keys } = await loadGatewayKeys(dataDir, MASTER);
    const file = readFileSync(join(dataDir, 'keys', 'sealing.key'));

    expect(file.toString('utf8')).not.toContain(keys.sealing.key.toString('hex'));
    expect(file.includes(keys.sealing.key)).toBe(false);
    expect(file.toString('utf8')).not.toContain(keys.sealing.key.toString('base64'));
    expect(statSync(join(dataDir, 'keys', 'sealing.key')).mode & 0o777).toBe(0o600);
    // The same master key opens it again: the key is stable across starts.
    expect((await loadGatewayKeys(dataDir, MASTER)).keys.sealing.key.equals(keys.sealing.key)).toBe(true);
  });

  it('given a copy of the folder without the master key, when it tries to open a sealed argument, then no key file opens it and loading the keys is refused', async () => {
    const { keys } = await loadGatewayKeys(dataDir, MASTER);
    const ref = await sealArguments(dataDir, keys.sealing.key);
    expect(await openWith(dataDir, keys.sealing.key, ref)).toBe(SECRET_ARGUMENT);
    cpSync(dataDir, copy, { recursive: true });

    for (const candidate of keysReadableFrom(copy)) expect(await openWith(copy, candidate, ref)).toBeUndefined();
    await expect(loadGatewayKeys(copy, {})).rejects.toThrow(/wrapped under the master key: set ONCEGATE_MASTER_KEY/);
    await expect(loadGatewayKeys(copy, { ONCEGATE_MASTER_KEY: 'a guess' })).rejects.toThrow(KeyFileError);
    await expect(loadGatewayKeys(copy, { ONCEGATE_MASTER_KEY: 'a guess' })).rejects.toThrow(/the master key does not open it/);
  });

  it('given a folder from an earlier version (the sealing key in plain hex), when the keys are loaded with the master key, then it is the same key, now wrapped, and it says so', async () => {
    const legacy = randomBytes(32);
    mkdirSync(join(dataDir, 'keys'), { mode: 0o700 });
    writeFileSync(join(dataDir, 'keys', 'sealing.key'), `${legacy.toString('hex')}\n`, { mode: 0o600 });
    const ref = await sealArguments(dataDir, legacy);

    const loaded = await loadGatewayKeys(dataDir, MASTER);

    expect(loaded.migratedKeyFiles).toEqual([join(dataDir, 'keys', 'sealing.key')]);
    expect(loaded.keys.sealing.key.equals(legacy)).toBe(true);
    expect(await openWith(dataDir, loaded.keys.sealing.key, ref)).toBe(SECRET_ARGUMENT);
    expect(readFileSync(join(dataDir, 'keys', 'sealing.key'), 'utf8')).not.toContain(legacy.toString('hex'));
    expect(readdirSync(join(dataDir, 'keys'))).not.toContain('sealing.key.next');
    const again = await loadGatewayKeys(dataDir, MASTER);
    expect(again.migratedKeyFiles).toEqual([]);
    expect(again.keys.sealing.key.equals(legacy)).toBe(true);
  });

  it('given a fresh data folder, when the keys are made, then no key file holds its key in plain, and a copy without the master key cannot recompute an argument HMAC', async () => {
    const { keys } = await loadGatewayKeys(dataDir, MASTER);
    for (const name of ['fingerprint', 'argument', 'sealing']) {
      const text = readFileSync(join(dataDir, 'keys', `${name}.key`), 'utf8');
      expect(JSON.parse(text)).toMatchObject({ format: 'oncegate-wrapped-key/1', purpose: `oncegate-${name}-key` });
    }
    const readable = keysReadableFrom(dataDir);
    expect(readable.some((key) => key.equals(keys.argument.secret) || key.equals(keys.fingerprint.secret))).toBe(false);
  });

  it('given a folder from an earlier version with every key in plain, when loaded, then each is the same key, now wrapped, and each is named', async () => {
    mkdirSync(join(dataDir, 'keys'), { mode: 0o700 });
    const legacy = Object.fromEntries(['fingerprint', 'argument', 'sealing'].map((name) => [name, randomBytes(32)]));
    for (const [name, key] of Object.entries(legacy)) writeFileSync(join(dataDir, 'keys', `${name}.key`), `${key.toString('hex')}\n`, { mode: 0o600 });

    const loaded = await loadGatewayKeys(dataDir, MASTER);

    expect(loaded.migratedKeyFiles).toEqual(['fingerprint', 'argument', 'sealing'].map((name) => join(dataDir, 'keys', `${name}.key`)));
    expect(loaded.keys.fingerprint.secret.equals(legacy['fingerprint']!)).toBe(true);
    expect(loaded.keys.argument.secret.equals(legacy['argument']!)).toBe(true);
    expect(keysReadableFrom(dataDir)).toEqual([]);
  });

  it('given a folder from an earlier version and no master key, when the keys are loaded, then it is refused and the plain key is left as it was', async () => {
    const legacy = randomBytes(32).toString('hex');
    mkdirSync(join(dataDir, 'keys'), { mode: 0o700 });
    writeFileSync(join(dataDir, 'keys', 'sealing.key'), `${legacy}\n`, { mode: 0o600 });

    await expect(loadGatewayKeys(dataDir, {})).rejects.toThrow(/set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE/);
    expect(readFileSync(join(dataDir, 'keys', 'sealing.key'), 'utf8').trim()).toBe(legacy);
  });

  it('given the development master key, when the keys are made, then they are wrapped with the light derivation; under a master key from the environment, with the default one', async () => {
    const kdfOf = (folder: string, name: string) => (JSON.parse(readFileSync(join(folder, 'keys', `${name}.key`), 'utf8')) as { kdf: unknown }).kdf;
    const { keys: dev } = await loadGatewayKeys(dataDir, {}, { dev: true });
    for (const name of ['fingerprint', 'argument', 'sealing']) expect(kdfOf(dataDir, name)).toEqual(DEVELOPMENT_KDF);
    // Opened again from the files, with the parameters they name.
    expect((await loadGatewayKeys(dataDir, {}, { dev: true })).keys).toEqual(dev);

    await loadGatewayKeys(copy, MASTER);
    for (const name of ['fingerprint', 'argument', 'sealing']) expect(kdfOf(copy, name)).toEqual(DEFAULT_KDF);
  });
});
