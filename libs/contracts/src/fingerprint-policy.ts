import { ArgumentIndex } from './argument-index';
import type { ToolContract } from './tool-contract';

/** What the fingerprint builder needs from a contract (docs/design.md section 2). Paths are top-level names or dotted. */
export interface FingerprintPolicy {
  /** Declared defaults, filled in before canonicalisation, by dotted path (`options.dry_run`). */
  defaults: Record<string, unknown>;
  /** Arguments removed from the canonical record. */
  exclude: string[];
  /** Arguments replaced by an HMAC under the secrets key before canonicalisation. */
  secret: string[];
}

export function fingerprintPolicyOf(tool: ToolContract): FingerprintPolicy {
  return {
    defaults: structuredClone(new ArgumentIndex(tool.inputSchema).defaults()),
    exclude: [...tool.fingerprint.exclude],
    secret: [...tool.secretArguments],
  };
}
