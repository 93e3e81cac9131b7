import { addMs, isBefore, type ApprovalScope, type AuthorizationBasis, type DenialBasis, type IsoInstant } from '@oncegate/domain';
import type { PolicyVerdict } from './policy';

/**
 * The authorization ladder (first match wins), as a pure function of what is known about one accepted call.
 * Every verdict names its rung and basis; the authorization service records it on the execution stream.
 *
 * 1. the vault is locked → deny (`vault_locked`)
 * 2. the target or the credential does not resolve (unknown, or not bound to this target) → deny
 * 3. the credential or the tool requires a per-use approval → ask for this execution
 * 4. the run holds a session grant for the tool → allow (`session_grant`)
 * 5. the policy allows this actor and tool without a grant → allow (`policy`)
 * 6. the policy requires a grant and the run has none yet → ask for the run
 * 7. otherwise → deny (`policy`)
 */
export type Rung =
  | 'vault_locked'
  | 'unresolved'
  | 'per_use_approval'
  | 'session_grant'
  | 'policy_allows'
  | 'run_grant_needed'
  | 'otherwise';

export type LadderVerdict =
  | { readonly kind: 'deny'; readonly rung: Rung; readonly basis: DenialBasis; readonly reason: string }
  | { readonly kind: 'ask'; readonly rung: Rung; readonly scope: ApprovalScope; readonly requestedBy: string; readonly reason: string }
  | { readonly kind: 'allow'; readonly rung: Rung; readonly basis: AuthorizationBasis; readonly reason: string };

export interface RunFacts {
  readonly runId: string;
  /** The actor that started the run; a run belongs to one actor. */
  readonly actor: string | null;
  readonly ended: boolean;
  /** Tools the run holds a session grant for (`*` for all). */
  readonly grantedTools: readonly string[];
}

export interface LadderFacts {
  readonly actor: string;
  readonly tool: string;
  readonly vault: { readonly locked: boolean; readonly reason: string };
  /** `null` when the tool's target resolves; otherwise why not. */
  readonly targetProblem: string | null;
  /** `null` when the tool needs no credential. */
  readonly credential: {
    readonly ref: string;
    /** `null` when the vault holds it and it is bound to this target; otherwise why not. */
    readonly problem: string | null;
    readonly perUseApproval: boolean;
  } | null;
  readonly toolPerUseApproval: boolean;
  /** `null` when the call belongs to no run. */
  readonly run: RunFacts | null;
  readonly policy: PolicyVerdict;
}

export function climbLadder(facts: LadderFacts): LadderVerdict {
  const { actor, tool, credential, run, policy } = facts;
  if (facts.vault.locked) {
    return { kind: 'deny', rung: 'vault_locked', basis: 'vault_locked', reason: `the vault is locked: ${facts.vault.reason}` };
  }
  if (facts.targetProblem !== null) {
    return { kind: 'deny', rung: 'unresolved', basis: 'target_unresolved', reason: facts.targetProblem };
  }
  if (credential !== null && credential.problem !== null) {
    return { kind: 'deny', rung: 'unresolved', basis: 'credential_unresolved', reason: credential.problem };
  }
  if (credential?.perUseApproval || facts.toolPerUseApproval) {
    const requestedBy = credential?.perUseApproval ? `credential:${credential.ref}` : `tool:${tool}`;
    const why = credential?.perUseApproval
      ? `credential '${credential.ref}' requires an approval for every use`
      : `tool ${tool} requires an approval for every call`;
    return { kind: 'ask', rung: 'per_use_approval', scope: 'execution', requestedBy, reason: `${why} (${actor}${policyNote(policy)})` };
  }
  const foreignRun = run !== null && run.actor !== null && run.actor !== actor;
  if (run !== null && !foreignRun && !run.ended && (run.grantedTools.includes('*') || run.grantedTools.includes(tool))) {
    return { kind: 'allow', rung: 'session_grant', basis: 'session_grant', reason: `run ${run.runId} holds a session grant for ${tool}` };
  }
  if (policy.decision === 'allow') {
    return { kind: 'allow', rung: 'policy_allows', basis: 'policy', reason: `${policy.source} allows ${actor} to call ${tool}` };
  }
  if (policy.decision === 'run_grant') {
    if (run === null) {
      return deny(`${policy.source} requires a session grant for ${tool}, and the call belongs to no run (declare one with _meta["io.oncegate/run"] or the Oncegate-Run header)`);
    }
    if (foreignRun) return deny(`run ${run.runId} belongs to ${run.actor}, not ${actor}`);
    if (run.ended) return deny(`run ${run.runId} has ended; its grants no longer apply`);
    return {
      kind: 'ask',
      rung: 'run_grant_needed',
      scope: 'run',
      requestedBy: `policy:${policy.source}`,
      reason: `${policy.source} requires a session grant for ${tool}; run ${run.runId} of ${actor} has none yet`,
    };
  }
  return deny(policy.decision === 'deny' ? `${policy.source} denies ${actor} the tool ${tool}` : `${policy.source} (${actor}, ${tool})`);
}

function deny(reason: string): LadderVerdict {
  return { kind: 'deny', rung: 'otherwise', basis: 'policy', reason };
}

function policyNote(policy: PolicyVerdict): string {
  return policy.decision === 'allow' ? '' : `; without the approval the policy would not allow it: ${policy.source}`;
}

/**
 * When an approval request times out: after the configured timeout, but never after the execution's correlation
 * window ends. A request outliving its window would let a retry after the window start a new execution and ask
 * a second time while the first request still waited.
 */
export function approvalDeadline(now: IsoInstant, timeoutMs: number, windowEndsAt: IsoInstant | null): IsoInstant {
  const deadline = addMs(now, timeoutMs);
  return windowEndsAt !== null && isBefore(windowEndsAt, deadline) ? windowEndsAt : deadline;
}
