import { existsSync, readFileSync } from 'node:fs';
import type { HttpCredential } from '@oncegate/dispatcher-http';
import type { SshCredential } from '@oncegate/dispatcher-ssh';
import type { CredentialSource } from '../config/gateway-config';

/**
 * Resolves a contract's credential reference at dispatch time only, from the environment variable or the key
 * file the configuration names. The value never leaves this object except into the outgoing request.
 */
export class CredentialResolver {
  constructor(
    private readonly sources: Readonly<Record<string, CredentialSource>>,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Is the reference configured and its value there? (Checked before dispatch, without reading it out.) */
  resolvable(ref: string): boolean {
    const source = this.sources[ref];
    if (source === undefined) return false;
    return source.file !== null ? existsSync(source.file) : (this.env[source.env ?? ''] ?? '') !== '';
  }

  private value(ref: string): string | undefined {
    const source = this.sources[ref];
    if (source === undefined) return undefined;
    if (source.file !== null) return existsSync(source.file) ? readFileSync(source.file, 'utf8') : undefined;
    const value = this.env[source.env ?? ''];
    return value === undefined || value === '' ? undefined : value;
  }

  resolve(ref: string): HttpCredential | undefined {
    const source = this.sources[ref];
    const value = this.value(ref);
    if (source === undefined || value === undefined) return undefined;
    return { headers: { [source.header]: source.scheme ? `${source.scheme} ${value.trim()}` : value.trim() } };
  }

  /** An SSH private key (OpenSSH or PEM) for key authentication. */
  resolveSshKey(ref: string): SshCredential | undefined {
    const value = this.value(ref);
    return value === undefined ? undefined : { privateKey: value };
  }
}
