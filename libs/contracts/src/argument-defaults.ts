import { fingerprintPolicyOf } from './fingerprint-policy';
import type { ToolContract } from './tool-contract';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The arguments with the contract's declared defaults filled where absent (an explicit `null` is a value),
 * shallowest first, creating missing objects on the way; a path through a present non-object is skipped
 * (validation refuses such arguments). The same rule the fingerprint uses, so what is sent is what was
 * fingerprinted.
 */
export function argumentsWithDefaults(tool: ToolContract, args: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const defaults = fingerprintPolicyOf(tool).defaults;
  const filled = structuredClone(args) as Record<string, unknown>;
  const paths = Object.keys(defaults).sort((a, b) => a.split('.').length - b.split('.').length);
  for (const path of paths) {
    const segments = path.split('.');
    const last = segments.pop() as string;
    let parent: Record<string, unknown> | undefined = filled;
    for (const segment of segments) {
      if (parent[segment] === undefined) parent[segment] = {};
      const next: unknown = parent[segment];
      parent = isRecord(next) ? next : undefined;
      if (parent === undefined) break;
    }
    if (parent !== undefined && parent[last] === undefined) parent[last] = structuredClone(defaults[path]);
  }
  return filled;
}
