import { describe, expect, it } from 'vitest';
import { approvalDeadline, climbLadder, type LadderFacts } from './ladder';
import { Policy } from './policy';

const allowAll = new Policy([{ tools: ['*'], actors: ['*'], decision: 'allow', source: 'authorization.rules[0]' }]);
const grantForDeploys = new Policy([
  { tools: ['deploy'], actors: ['agent:ci'], decision: 'run_grant', source: 'authorization.rules[0]' },
  { tools: ['deploy'], actors: ['*'], decision: 'deny', source: 'authorization.rules[1]' },
  { tools: ['get_build'], actors: ['*'], decision: 'allow', source: 'authorization.rules[2]' },
]);

/** A call every rung would let through: vault open, everything resolves, no approval needed, policy allows. */
function facts(overrides: Partial<LadderFacts> = {}): LadderFacts {
  return {
    actor: 'agent:ci',
    tool: 'deploy',
    vault: { locked: false, reason: '' },
    targetProblem: null,
    credential: { ref: 'deploy-key', problem: null, perUseApproval: false },
    toolPerUseApproval: false,
    run: { runId: 'r1', actor: 'agent:ci', ended: false, grantedTools: [] },
    policy: allowAll.decide('agent:ci', 'deploy'),
    ...overrides,
  };
}

describe('the authorization ladder, first match wins', () => {
  it('rung 1: a locked vault denies with vault_locked, whatever else holds', () => {
    const verdict = climbLadder(
      facts({ vault: { locked: true, reason: 'locked by operator:cli' }, targetProblem: 'gone', toolPerUseApproval: true }),
    );
    expect(verdict).toMatchObject({ kind: 'deny', rung: 'vault_locked', basis: 'vault_locked' });
    expect(verdict.reason).toContain('locked by operator:cli');
  });

  it('rung 2: an unresolved target denies with target_unresolved', () => {
    const verdict = climbLadder(facts({ targetProblem: 'tool deploy is no longer in the contract file', toolPerUseApproval: true }));
    expect(verdict).toMatchObject({ kind: 'deny', rung: 'unresolved', basis: 'target_unresolved' });
  });

  it('rung 2: a credential bound to another host denies with credential_unresolved and says why', () => {
    const problem = "credential 'deploy-key' is bound to a.example:443, not b.example:443/releases";
    const verdict = climbLadder(facts({ credential: { ref: 'deploy-key', problem, perUseApproval: true } }));
    expect(verdict).toEqual({ kind: 'deny', rung: 'unresolved', basis: 'credential_unresolved', reason: problem });
  });

  it('rung 3: a credential that requires per-use approval asks for this execution, before any grant or policy', () => {
    const verdict = climbLadder(
      facts({
        credential: { ref: 'deploy-key', problem: null, perUseApproval: true },
        run: { runId: 'r1', actor: 'agent:ci', ended: false, grantedTools: ['*'] },
      }),
    );
    expect(verdict).toMatchObject({ kind: 'ask', rung: 'per_use_approval', scope: 'execution', requestedBy: 'credential:deploy-key' });
  });

  it('rung 3: a tool that requires per-use approval asks, and the request says what the policy alone would do', () => {
    const verdict = climbLadder(facts({ toolPerUseApproval: true, policy: grantForDeploys.decide('agent:other', 'deploy') }));
    expect(verdict).toMatchObject({ kind: 'ask', rung: 'per_use_approval', scope: 'execution', requestedBy: 'tool:deploy' });
    expect(verdict.reason).toContain('authorization.rules[1]');
  });

  it('rung 4: a run holding a session grant for the tool is allowed with basis session_grant', () => {
    const verdict = climbLadder(
      facts({ policy: grantForDeploys.decide('agent:ci', 'deploy'), run: { runId: 'r1', actor: 'agent:ci', ended: false, grantedTools: ['deploy'] } }),
    );
    expect(verdict).toMatchObject({ kind: 'allow', rung: 'session_grant', basis: 'session_grant' });
  });

  it("rung 4 does not apply to another actor's run or an ended run", () => {
    const foreign = climbLadder(
      facts({ policy: grantForDeploys.decide('agent:ci', 'deploy'), run: { runId: 'r1', actor: 'agent:other', ended: false, grantedTools: ['*'] } }),
    );
    expect(foreign).toMatchObject({ kind: 'deny', basis: 'policy' });
    expect(foreign.reason).toContain('belongs to agent:other');
    const ended = climbLadder(
      facts({ policy: grantForDeploys.decide('agent:ci', 'deploy'), run: { runId: 'r1', actor: 'agent:ci', ended: true, grantedTools: ['deploy'] } }),
    );
    expect(ended).toMatchObject({ kind: 'deny', basis: 'policy' });
    expect(ended.reason).toContain('has ended');
  });

  it('rung 5: the policy allows the actor and tool without a grant, basis policy, naming the rule', () => {
    const verdict = climbLadder(facts({ tool: 'get_build', policy: grantForDeploys.decide('agent:ci', 'get_build') }));
    expect(verdict).toEqual({ kind: 'allow', rung: 'policy_allows', basis: 'policy', reason: 'authorization.rules[2] allows agent:ci to call get_build' });
  });

  it('rung 6: a new run where the policy requires a grant asks for the run', () => {
    const verdict = climbLadder(facts({ policy: grantForDeploys.decide('agent:ci', 'deploy') }));
    expect(verdict).toMatchObject({ kind: 'ask', rung: 'run_grant_needed', scope: 'run', requestedBy: 'policy:authorization.rules[0]' });
  });

  it('rung 6 with no run at all denies: there is nothing to grant', () => {
    const verdict = climbLadder(facts({ run: null, policy: grantForDeploys.decide('agent:ci', 'deploy') }));
    expect(verdict).toMatchObject({ kind: 'deny', rung: 'otherwise', basis: 'policy' });
    expect(verdict.reason).toContain('io.oncegate/run');
  });

  it('rung 7: a deny rule, or no rule at all, denies with basis policy', () => {
    const denied = climbLadder(facts({ actor: 'agent:other', policy: grantForDeploys.decide('agent:other', 'deploy') }));
    expect(denied).toEqual({ kind: 'deny', rung: 'otherwise', basis: 'policy', reason: 'authorization.rules[1] denies agent:other the tool deploy' });
    const unmatched = climbLadder(facts({ tool: 'rotate', policy: grantForDeploys.decide('agent:ci', 'rotate') }));
    expect(unmatched).toMatchObject({ kind: 'deny', rung: 'otherwise', basis: 'policy' });
    expect(unmatched.reason).toContain('no rule of the policy');
  });
});

describe('the policy', () => {
  it('takes the first rule naming the tool and the actor', () => {
    expect(grantForDeploys.decide('agent:ci', 'deploy')).toEqual({ decision: 'run_grant', source: 'authorization.rules[0]' });
    expect(grantForDeploys.decide('agent:x', 'deploy')).toEqual({ decision: 'deny', source: 'authorization.rules[1]' });
    expect(grantForDeploys.decide('agent:x', 'get_build').decision).toBe('allow');
    expect(grantForDeploys.decide('agent:x', 'other').decision).toBe('no_rule');
  });

  it('names tools the contracts do not declare', () => {
    expect(grantForDeploys.unknownTools(new Set(['deploy']))).toEqual([{ source: 'authorization.rules[2]', tool: 'get_build', line: 0, column: 0 }]);
  });
});

describe('the deadline of an approval request', () => {
  const now = '2026-11-30T10:00:00.000Z' as const;

  it('is the configured timeout after the request', () => {
    expect(approvalDeadline(now, 15 * 60_000, '2026-11-30T11:00:00.000Z')).toBe('2026-11-30T10:15:00.000Z');
    expect(approvalDeadline(now, 15 * 60_000, null)).toBe('2026-11-30T10:15:00.000Z');
  });

  it('never outlives the correlation window, so a retry after the window finds no request still waiting', () => {
    expect(approvalDeadline(now, 15 * 60_000, '2026-11-30T10:05:00.000Z')).toBe('2026-11-30T10:05:00.000Z');
  });
});
