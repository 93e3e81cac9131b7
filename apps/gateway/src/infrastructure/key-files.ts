import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The gateway's own keys live in `<data dir>/keys/`, created at first start with owner-only permissions:
 * fingerprint HMAC key, the separate key for secret arguments, and the sealing key for results and arguments.
 */
export interface GatewayKeys {
  readonly fingerprint: { readonly id: string; readonly secret: Buffer };
  readonly argument: { readonly id: string; readonly secret: Buffer };
  readonly sealing: { readonly id: string; readonly key: Buffer };
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

function loadOrCreate(dir: string, name: string): Buffer {
  const file = join(dir, `${name}.key`);
  if (!existsSync(file)) {
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  }
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  const hex = readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new KeyFileError(file, 'expected 64 lower-case hex characters (32 bytes)');
  return Buffer.from(hex, 'hex');
}

export function loadGatewayKeys(dataDir: string): GatewayKeys {
  const dir = join(dataDir, 'keys');
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    fingerprint: { id: 'fp1', secret: loadOrCreate(dir, 'fingerprint') },
    argument: { id: 'arg1', secret: loadOrCreate(dir, 'argument') },
    sealing: { id: 'seal1', key: loadOrCreate(dir, 'sealing') },
  };
}
