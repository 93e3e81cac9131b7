import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_KDF, DEVELOPMENT_KDF, developmentMasterKey, kdfParams, masterKey, unwrapKey, usesDevelopmentMasterKey, wrapKey, type WrappedKey } from '@oncegate/vault';

/**
 * The gateway's own keys live in `<data dir>/keys/`, created at first start with owner-only permissions:
 * fingerprint HMAC key, the separate key for secret arguments, and the sealing key for results and arguments.
 * Each is stored wrapped under the master key (as the vault's data key is), so a copy of the data folder without
 * the master key opens no sealed argument and no stored result, and cannot test guesses of an argument against
 * the HMACs the journal records.
 */
export interface GatewayKeys {
  readonly fingerprint: { readonly id: string; readonly secret: Buffer };
  readonly argument: { readonly id: string; readonly secret: Buffer };
  readonly sealing: { readonly id: string; readonly key: Buffer };
}

export interface LoadedGatewayKeys {
  readonly keys: GatewayKeys;
  /** The key files that held their key in plain (a folder from an earlier version) and were wrapped now. */
  readonly migratedKeyFiles: readonly string[];
}

export interface LoadGatewayKeysOptions {
  /** Development: without a master key in the environment, use (or make) the development master key file. */
  readonly dev?: boolean;
}

export class KeyFileError extends Error {
  readonly kind = 'key_file_invalid' as const;
  constructor(
    readonly file: string,
    readonly reason: string,
  ) {
    super(`key file ${file}: ${reason}`);
    this.name = 'KeyFileError';
  }
}

const PLAIN_KEY = /^[0-9a-f]{64}$/;
/** What each key file's key is wrapped for (the wrap's additional authenticated data). */
const KEY_PURPOSES = {
  sealing: 'oncegate-sealing-key',
  argument: 'oncegate-argument-key',
  fingerprint: 'oncegate-fingerprint-key',
} as const;
type KeyName = keyof typeof KEY_PURPOSES;
const WRAPPED_KEY_FORMAT = 'oncegate-wrapped-key/1';

/** `keys/<name>.key` as written: JSON, every byte field in hex. */
interface WrappedKeyFile {
  readonly format: typeof WRAPPED_KEY_FORMAT;
  readonly purpose: string;
  readonly kdf: WrappedKey['kdf'];
  readonly salt: string;
  readonly nonce: string;
  readonly wrapped: string;
}

function ownerOnly(file: string): void {
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
}

function wrappedKeyText(record: WrappedKey, purpose: string): string {
  const content: WrappedKeyFile = {
    format: WRAPPED_KEY_FORMAT,
    purpose,
    kdf: record.kdf,
    salt: record.salt.toString('hex'),
    nonce: record.wrapped.nonce.toString('hex'),
    wrapped: record.wrapped.ciphertext.toString('hex'),
  };
  return `${JSON.stringify(content)}\n`;
}

function parseWrappedKey(file: string, text: string, purpose: string): WrappedKey {
  let content: Partial<WrappedKeyFile>;
  try {
    content = JSON.parse(text) as Partial<WrappedKeyFile>;
  } catch {
    throw new KeyFileError(file, 'neither a wrapped key (JSON) nor a key in plain hex');
  }
  const kdf = kdfParams(content.kdf);
  const hex = [content.salt, content.nonce, content.wrapped];
  if (content.format !== WRAPPED_KEY_FORMAT || content.purpose !== purpose || kdf === undefined || !hex.every((h) => typeof h === 'string' && /^[0-9a-f]+$/.test(h))) {
    throw new KeyFileError(file, `not a wrapped key (${purpose}) in the format ${WRAPPED_KEY_FORMAT}`);
  }
  const [salt, nonce, ciphertext] = hex.map((h) => Buffer.from(h!, 'hex')) as [Buffer, Buffer, Buffer];
  return { kdf, salt, wrapped: { nonce, ciphertext } };
}

/** Writes `text` to `file` whole or not at all: a crash leaves the old file or the new one, never a mix. */
function replaceFile(file: string, text: string): void {
  const next = `${file}.next`;
  const fd = openSync(next, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  chmodSync(next, 0o600);
  renameSync(next, file);
}

/**
 * One key: made (random) and written wrapped when there is none; unwrapped with the master key; and when the file
 * holds it in plain (written by an earlier version), the same key, wrapped in place.
 */
/** A key file's key, and whether it held its key in plain and was wrapped now. */
interface LoadedKey {
  key: Buffer;
  migrated: boolean;
}

async function loadOrCreateWrappedKey(dir: string, name: KeyName, master: () => string, kdf: () => WrappedKey['kdf']): Promise<LoadedKey> {
  const file = join(dir, `${name}.key`);
  const purpose = KEY_PURPOSES[name];
  if (!existsSync(file)) {
    const key = randomBytes(32);
    try {
      writeFileSync(file, wrappedKeyText(await wrapKey(master(), key, purpose, kdf()), purpose), { mode: 0o600, flag: 'wx' });
      return { key, migrated: false };
    } catch (error) {
      // Another process starting on the same folder made it first: use that one.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
  ownerOnly(file);
  const text = readFileSync(file, 'utf8').trim();
  if (PLAIN_KEY.test(text)) {
    // The key stays the same (everything sealed or fingerprinted so far depends on it); only how it is stored changes.
    const key = Buffer.from(text, 'hex');
    replaceFile(file, wrappedKeyText(await wrapKey(master(), key, purpose, kdf()), purpose));
    return { key, migrated: true };
  }
  const key = await unwrapKey(master(), parseWrappedKey(file, text, purpose), purpose);
  if (key === undefined || key.length !== 32) throw new KeyFileError(file, 'the master key does not open it (another master key, or the file was changed)');
  return { key, migrated: false };
}

/**
 * The data folder's keys, made where missing. Opening them needs the master key (`ONCEGATE_MASTER_KEY`,
 * `ONCEGATE_MASTER_KEY_FILE`, or with `dev` the development key file).
 *
 * @throws KeyFileError when a key file is unreadable, or the sealing key cannot be opened or wrapped
 */
export async function loadGatewayKeys(dataDir: string, env: NodeJS.ProcessEnv, options: LoadGatewayKeysOptions = {}): Promise<LoadedGatewayKeys> {
  const dir = join(dataDir, 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const master = (): string => {
    const key = masterKey(dataDir, env) ?? (options.dev ? developmentMasterKey(dataDir).key : undefined);
    if (key === undefined || key === '') {
      throw new KeyFileError(join(dir, 'sealing.key'), "the gateway's keys are wrapped under the master key: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE");
    }
    return key;
  };
  // Taken after master(), which may have made the development key file.
  const kdf = () => (usesDevelopmentMasterKey(dataDir, env) ? DEVELOPMENT_KDF : DEFAULT_KDF);
  const names = ['fingerprint', 'argument', 'sealing'] as const;
  // Each file is unwrapped by its own scrypt on the thread pool: all three at once, the first failure (in this
  // order) reported.
  const settled = await Promise.allSettled(names.map((name) => loadOrCreateWrappedKey(dir, name, master, kdf)));
  const loaded = settled.map((result) => {
    if (result.status === 'rejected') throw result.reason;
    return result.value;
  });
  const [fingerprint, argument, sealing] = loaded as [LoadedKey, LoadedKey, LoadedKey];
  return {
    keys: {
      fingerprint: { id: 'fp1', secret: fingerprint.key },
      argument: { id: 'arg1', secret: argument.key },
      sealing: { id: 'seal1', key: sealing.key },
    },
    migratedKeyFiles: names.filter((_, i) => loaded[i]!.migrated).map((name) => join(dir, `${name}.key`)),
  };
}
