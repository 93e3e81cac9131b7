import { Logger } from '@nestjs/common';
import { processMetrics } from './process-metrics';

/** Where a token was refused: the MCP endpoint (agents), the approvals API, the console. */
export type RefusalSurface = 'mcp' | 'approvals' | 'console';

/** How often one kind of refusal is logged at most: a client retrying a revoked token must not flood the log. */
const LOG_EVERY_MS = 60_000;

/**
 * Requests refused for their token: counted by surface and reason (`oncegate_token_refusals_total`), and logged — the
 * surface, the reason, the principal a revoked token was issued to, never the token or any part of it. One line per
 * surface, reason and principal a minute at most; the next line says how many were not logged since.
 */
export class TokenRefusals {
  private readonly log = new Logger('auth');
  private readonly lastLogged = new Map<string, { at: number; unlogged: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  refused(surface: RefusalSurface, reason: string, principal?: string): void {
    processMetrics().tokenRefusals.inc({ surface, reason });
    const key = `${surface}\u0000${reason}\u0000${principal ?? ''}`;
    const last = this.lastLogged.get(key);
    const now = this.now();
    if (last !== undefined && now - last.at < LOG_EVERY_MS) {
      last.unlogged += 1;
      return;
    }
    const more = last === undefined || last.unlogged === 0 ? '' : ` (and ${last.unlogged} more like it since ${new Date(last.at).toISOString()})`;
    this.lastLogged.set(key, { at: now, unlogged: 0 });
    this.log.warn(`refused a request on ${surface}: ${describe(reason)}${principal === undefined ? '' : ` (${principal})`}${more}`);
  }
}

function describe(reason: string): string {
  switch (reason) {
    case 'missing':
      return 'no token';
    case 'malformed':
      return 'not an Oncegate token';
    case 'wrong_kind':
      return 'a token of another kind';
    case 'unknown':
      return 'an unknown token';
    case 'revoked':
      return 'a revoked token';
    default:
      return reason.replaceAll('_', ' ');
  }
}

let refusals: TokenRefusals | undefined;

/** This process's refusal counter and log. */
export function tokenRefusals(): TokenRefusals {
  refusals ??= new TokenRefusals();
  return refusals;
}
