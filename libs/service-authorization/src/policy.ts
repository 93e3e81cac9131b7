import type { PolicyDecision, PolicyRule } from '@oncegate/host-config';

export interface PolicyVerdict {
  readonly decision: PolicyDecision | 'no_rule';
  /** The rule that decided (`authorization.rules[2]`), or why none did. */
  readonly source: string;
}

/** The configured policy: the first rule naming the tool (or `*`) and the actor (or `*`) decides. */
export class Policy {
  constructor(private readonly rules: readonly PolicyRule[]) {}

  decide(actor: string, tool: string): PolicyVerdict {
    const rule = this.rules.find(
      (r) => (r.tools.includes('*') || r.tools.includes(tool)) && (r.actors.includes('*') || r.actors.includes(actor)),
    );
    return rule ? { decision: rule.decision, source: rule.source } : { decision: 'no_rule', source: 'no rule of the policy names this actor and tool' };
  }

  /** Tool names the rules mention that the contracts do not declare (a typo in the configuration). */
  unknownTools(known: ReadonlySet<string>): { source: string; tool: string; line: number; column: number }[] {
    return this.rules.flatMap((rule) =>
      rule.tools
        .filter((tool) => tool !== '*' && !known.has(tool))
        .map((tool) => ({ source: rule.source, tool, line: rule.at?.line ?? 0, column: rule.at?.column ?? 0 })),
    );
  }
}
