import { createHash } from 'node:crypto';

/** A pinned host key from a contract (`ssh-ed25519 AAAA…`), decoded. */
export interface PinnedHostKey {
  readonly type: string;
  /** The SSH wire blob the server sends in its key exchange. */
  readonly blob: Buffer;
  readonly fingerprint: string;
}

/**
 * Decodes the contract's `host_key`. The contract parser has already checked it is a whole key of a supported
 * type; this only turns it into bytes.
 *
 * @throws Error for text that is not `<type> <base64>`
 */
export function parsePinnedHostKey(hostKey: string): PinnedHostKey {
  const [type = '', base64 = ''] = hostKey.trim().split(/\s+/);
  const blob = Buffer.from(base64, 'base64');
  if (type === '' || blob.length === 0) throw new Error(`not a public key in OpenSSH form: '${type} …'`);
  return { type, blob, fingerprint: sshFingerprint(blob) };
}

/** OpenSSH's `SHA256:…` fingerprint of a public key blob, as `ssh-keygen -l` prints it. */
export function sshFingerprint(blob: Uint8Array): string {
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** The key type named inside a blob (its first SSH string), e.g. `ssh-ed25519`; `unknown` if unreadable. */
export function blobKeyType(blob: Buffer): string {
  if (blob.length < 4) return 'unknown';
  const length = blob.readUInt32BE(0);
  return length > 0 && 4 + length <= blob.length ? blob.subarray(4, 4 + length).toString('latin1') : 'unknown';
}

/**
 * The host key algorithms to offer: only those that make the server present a key of the pinned type, so a host
 * holding several keys shows the one we can check.
 */
export function hostKeyAlgorithms(type: string): string[] {
  return type === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [type];
}
