import { RECOVERY_POLICIES } from '@oncegate/domain';
import type { ToolContract } from './tool-contract';

/** MCP tool annotations; derived from the operation class, never written in a contract (docs/design.md section 7). */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  idempotentHint: boolean;
  destructiveHint: boolean;
}

export function annotationsOf(tool: ToolContract): ToolAnnotations {
  const { readOnlyHint, idempotentHint, destructiveHint } = RECOVERY_POLICIES[tool.operationClass].annotations;
  return { readOnlyHint, idempotentHint, destructiveHint };
}
