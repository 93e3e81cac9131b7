import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The journal's signing key pair (Ed25519), made at `oncegate init`. The public key is a plain PEM file an
 * auditor can be given; the private key is stored encrypted (PKCS#8, AES-256) under the master key, which
 * comes from `ONCEGATE_MASTER_KEY` or the file `ONCEGATE_MASTER_KEY_FILE` names — never from the data folder
 * unless the operator put it there (`oncegate init --dev` does, for development only).
 */
export interface SealKeyPaths {
  readonly publicKey: string;
  readonly privateKey: string;
  readonly devMasterKey: string;
}

export class SealKeyError extends Error {
  readonly kind = 'seal_key_unavailable' as const;
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'SealKeyError';
  }
}

export function sealKeyPaths(dataDir: string): SealKeyPaths {
  const dir = join(dataDir, 'keys');
  return {
    publicKey: join(dir, 'journal-seal.pub.pem'),
    privateKey: join(dir, 'journal-seal.key.pem'),
    devMasterKey: join(dir, 'master.dev.key'),
  };
}

/**
 * Whether the master key this process uses for `dataDir` is the development key file (no master key in the
 * environment): what is wrapped under it is wrapped with DEVELOPMENT_KDF.
 */
export function usesDevelopmentMasterKey(dataDir: string, env: NodeJS.ProcessEnv): boolean {
  return !env['ONCEGATE_MASTER_KEY'] && !env['ONCEGATE_MASTER_KEY_FILE'] && existsSync(sealKeyPaths(dataDir).devMasterKey);
}

/** The master key: the environment, the file it names, or (development) the file `init --dev` wrote. */
export function masterKey(dataDir: string, env: NodeJS.ProcessEnv): string | undefined {
  if (env['ONCEGATE_MASTER_KEY']) return env['ONCEGATE_MASTER_KEY'];
  const file = env['ONCEGATE_MASTER_KEY_FILE'];
  if (file) {
    if (!existsSync(file)) throw new SealKeyError(`ONCEGATE_MASTER_KEY_FILE names ${file}, which does not exist`);
    return readFileSync(file, 'utf8').trim();
  }
  const dev = sealKeyPaths(dataDir).devMasterKey;
  return existsSync(dev) ? readFileSync(dev, 'utf8').trim() : undefined;
}

/**
 * The development master key (`init --dev`, `vault init --dev`): the key file in the data folder, made now with
 * a random key (0600) when there is none. Whether one was made is returned so the caller can say so.
 */
export function developmentMasterKey(dataDir: string): { key: string; file: string; created: boolean } {
  const file = sealKeyPaths(dataDir).devMasterKey;
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), file, created: false };
  mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  const key = randomBytes(32).toString('hex');
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return { key, file, created: true };
}

export interface InitResult {
  readonly created: boolean;
  readonly publicKeyFile: string;
  readonly devMasterKeyFile: string | undefined;
}

/** Makes the key pair unless it exists. With `dev`, a random master key is written beside it (0600). */
export function initSealKeys(dataDir: string, env: NodeJS.ProcessEnv, options: { dev?: boolean } = {}): InitResult {
  const paths = sealKeyPaths(dataDir);
  mkdirSync(join(dataDir, 'keys'), { recursive: true, mode: 0o700 });
  if (existsSync(paths.privateKey) && existsSync(paths.publicKey)) {
    return { created: false, publicKeyFile: paths.publicKey, devMasterKeyFile: existsSync(paths.devMasterKey) ? paths.devMasterKey : undefined };
  }
  let passphrase = masterKey(dataDir, env);
  let devMasterKeyFile: string | undefined;
  if (passphrase === undefined) {
    if (!options.dev) {
      throw new SealKeyError('no master key: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE (or use --dev for a development key)');
    }
    passphrase = developmentMasterKey(dataDir).key;
    devMasterKeyFile = paths.devMasterKey;
  }
  const { publicKey, privateKey } = generateKeyPairSync('ed25519', {
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase },
  });
  writeFileSync(paths.privateKey, privateKey, { mode: 0o600 });
  chmodSync(paths.privateKey, 0o600);
  writeFileSync(paths.publicKey, publicKey, { mode: 0o644 });
  return { created: true, publicKeyFile: paths.publicKey, devMasterKeyFile };
}

export function loadSealPublicKey(file: string): KeyObject {
  try {
    return createPublicKey(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new SealKeyError(`cannot read the public key ${file}: ${(error as Error).message}`);
  }
}

/** The unlocked private key, or a clear reason why it cannot be unlocked. */
export function loadSealPrivateKey(dataDir: string, env: NodeJS.ProcessEnv): KeyObject {
  const paths = sealKeyPaths(dataDir);
  if (!existsSync(paths.privateKey)) throw new SealKeyError(`no journal key pair in ${dataDir}; run: oncegate init`);
  const passphrase = masterKey(dataDir, env);
  if (passphrase === undefined) throw new SealKeyError('the journal key is locked: set ONCEGATE_MASTER_KEY or ONCEGATE_MASTER_KEY_FILE');
  try {
    return createPrivateKey({ key: readFileSync(paths.privateKey, 'utf8'), format: 'pem', passphrase });
  } catch {
    throw new SealKeyError('the master key does not unlock the journal key');
  }
}
