import type { HttpCredential } from '@oncegate/dispatcher-http';
import type { CredentialSource } from '../config/gateway-config';

/**
 * Resolves a contract's credential reference to the header it is sent in, reading the value from the
 * environment at dispatch time only. The value never leaves this object except into the outgoing request.
 */
export class CredentialResolver {
  constructor(
    private readonly sources: Readonly<Record<string, CredentialSource>>,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** Is the reference configured and its variable set? (Checked before dispatch, without reading it out.) */
  resolvable(ref: string): boolean {
    const source = this.sources[ref];
    return source !== undefined && (this.env[source.env] ?? '') !== '';
  }

  resolve(ref: string): HttpCredential | undefined {
    const source = this.sources[ref];
    const value = source === undefined ? undefined : this.env[source.env];
    if (source === undefined || value === undefined || value === '') return undefined;
    return { headers: { [source.header]: source.scheme ? `${source.scheme} ${value}` : value } };
  }
}
