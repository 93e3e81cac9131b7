/**
 * Faults the demo target can inject, so a newcomer (and a test) can watch the gateway handle a lost response.
 * Every fault except `status` without `applyEffect` lets the endpoint apply its effect first: the point is a
 * target that *did* act and then failed to say so.
 */
export type FaultRule =
  /** Apply the effect, withhold the answer until `release` (or forever). */
  | { readonly match: string; readonly action: 'hold'; readonly times?: number }
  /** Apply the effect and never answer: the caller times out after sending. */
  | { readonly match: string; readonly action: 'hang'; readonly times?: number }
  /** Apply the effect, then reset the connection (TCP RST) instead of answering. */
  | { readonly match: string; readonly action: 'reset'; readonly times?: number }
  /** Apply the effect, answer after `ms` milliseconds. */
  | { readonly match: string; readonly action: 'delay'; readonly ms: number; readonly times?: number }
  /**
   * Answer `status` instead. With `applyEffect` the endpoint acts first (a proxy's 502/504 after the origin
   * acted); without it nothing happens (a 503 in front of the origin).
   */
  | { readonly match: string; readonly action: 'status'; readonly status: number; readonly applyEffect?: boolean; readonly times?: number };

export type FaultAction = FaultRule['action'];

/** A fault rule or control request that makes no sense; the message says why. */
export class DemoControlError extends Error {
  readonly kind = 'demo_control' as const;

  constructor(reason: string) {
    super(reason);
    this.name = 'DemoControlError';
  }
}

const ACTIONS: readonly FaultAction[] = ['hold', 'hang', 'reset', 'delay', 'status'];
const MATCH = /^(\*|[A-Z]+ \/\S*|[A-Z]+ \*)$/;

/**
 * Does `match` select this request? `match` is `*` (everything), or a method and either the exact path
 * (`PUT /config/db.pool`), the endpoint pattern (`PUT /config/:name`) or `*` (`POST *`).
 */
export function matches(match: string, method: string, path: string, endpoint: string): boolean {
  if (match === '*') return true;
  const [matchMethod, matchPath] = match.split(' ', 2);
  if (matchMethod !== method) return false;
  return matchPath === '*' || matchPath === path || `${method} ${matchPath}` === endpoint;
}

/** Checks a rule from the outside world (the control API takes JSON). */
export function parseFaultRule(input: unknown): FaultRule {
  if (typeof input !== 'object' || input === null) throw new DemoControlError('a fault rule is a JSON object');
  const rule = input as Record<string, unknown>;
  const { match, action, times } = rule;
  if (typeof match !== 'string' || !MATCH.test(match)) {
    throw new DemoControlError(`"match" must be '*' or '<METHOD> <path or pattern>', e.g. "POST /payments"; got ${JSON.stringify(match)}`);
  }
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) {
    throw new DemoControlError(`"action" must be one of ${ACTIONS.join(', ')}; got ${JSON.stringify(action)}`);
  }
  if (times !== undefined && (typeof times !== 'number' || !Number.isInteger(times) || times < 1)) {
    throw new DemoControlError('"times" must be a positive integer, or absent for a rule that stays');
  }
  const base = times === undefined ? { match } : { match, times };
  switch (action as FaultAction) {
    case 'hold':
    case 'hang':
    case 'reset':
      return { ...base, action: action as 'hold' | 'hang' | 'reset' };
    case 'delay': {
      const ms = rule['ms'];
      if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 0) throw new DemoControlError('"delay" needs "ms", a non-negative integer');
      return { ...base, action: 'delay', ms };
    }
    case 'status': {
      const status = rule['status'];
      if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599) {
        throw new DemoControlError('"status" needs "status", an integer from 200 to 599');
      }
      const applyEffect = rule['applyEffect'];
      if (applyEffect !== undefined && typeof applyEffect !== 'boolean') throw new DemoControlError('"applyEffect" must be a boolean');
      return { ...base, action: 'status', status, ...(applyEffect === undefined ? {} : { applyEffect }) };
    }
  }
}

/** Rules in the order they were added; the first that matches a request applies, and a `times` rule wears out. */
export class FaultRules {
  private rules: { rule: FaultRule; remaining: number | undefined }[] = [];

  add(rule: FaultRule): void {
    this.rules.push({ rule, remaining: rule.times });
  }

  /** Takes the first rule matching the request, counting one use of it. */
  take(method: string, path: string, endpoint: string): FaultRule | undefined {
    const index = this.rules.findIndex(({ rule }) => matches(rule.match, method, path, endpoint));
    const entry = this.rules[index];
    if (entry === undefined) return undefined;
    if (entry.remaining !== undefined) {
      entry.remaining -= 1;
      if (entry.remaining === 0) this.rules.splice(index, 1);
    }
    return entry.rule;
  }

  /** Removes the `hold` rules with this match (all of them when `match` is absent). */
  removeHolds(match: string | undefined): void {
    this.rules = this.rules.filter(({ rule }) => rule.action !== 'hold' || (match !== undefined && rule.match !== match));
  }

  list(): FaultRule[] {
    return this.rules.map(({ rule, remaining }) => (remaining === undefined ? rule : { ...rule, times: remaining }));
  }

  clear(): void {
    this.rules = [];
  }
}
