import { ArgumentIndex } from './argument-index';
import { deepFreeze } from './deep-freeze';
import type { ToolContract } from './tool-contract';

/** What the fingerprint builder needs from a contract (docs/design.md section 2). Paths are top-level names or dotted. */
export interface FingerprintPolicy {
  /** Declared defaults, filled in before canonicalisation, by dotted path (`options.dry_run`). */
  readonly defaults: Readonly<Record<string, unknown>>;
  /** Arguments removed from the canonical record. */
  readonly exclude: readonly string[];
  /** Arguments replaced by an HMAC under the secrets key before canonicalisation. */
  readonly secret: readonly string[];
}

/** The policies of contracts that cannot change (a loaded contract file is frozen through): worked out once each. */
const policiesOfFrozen = new WeakMap<ToolContract, FingerprintPolicy>();

/**
 * The contract's fingerprint policy. A contract frozen through, as a contract file loads, is read once and its
 * policy (frozen too) given again on every call; any other is read each time into a policy of its own.
 */
export function fingerprintPolicyOf(tool: ToolContract): FingerprintPolicy {
  const known = policiesOfFrozen.get(tool);
  if (known !== undefined) return known;
  const policy: FingerprintPolicy = {
    defaults: structuredClone(new ArgumentIndex(tool.inputSchema).defaults()),
    exclude: [...tool.fingerprint.exclude],
    secret: [...tool.secretArguments],
  };
  if (!frozenThrough(tool)) return policy;
  deepFreeze(policy);
  policiesOfFrozen.set(tool, policy);
  return policy;
}

function frozenThrough(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(frozenThrough);
}

