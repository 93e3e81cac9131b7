import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The console's session cookie: HttpOnly, SameSite=Strict, only sent to `/console`. */
export const CONSOLE_COOKIE = 'oncegate_console';

/** The header every console decision carries: the session's anti-forgery token, which only the page can read. */
export const CSRF_HEADER = 'x-oncegate-csrf';

export interface ConsoleSessionLimits {
  /** A session with no request for this long ends. */
  readonly idleMs: number;
  /** A session ends this long after sign-in, however busy. */
  readonly maxAgeMs: number;
}

export const DEFAULT_CONSOLE_SESSION_LIMITS: ConsoleSessionLimits = { idleMs: 30 * 60_000, maxAgeMs: 12 * 60 * 60_000 };

export interface ConsoleSession {
  readonly actor: string;
  /**
   * The approver token the person signed in with, kept in this process's memory only (never in the page): every
   * request authenticates it again, so a revoked approver loses the session at once.
   */
  readonly approverToken: string;
  /** Sent to the page in a JSON body and echoed in `x-oncegate-csrf`; a forged request cannot read it. */
  readonly csrfToken: string;
  readonly startedAt: number;
  lastSeenAt: number;
}

/**
 * Console sign-ins, in this process's memory: the cookie holds a random session id, the map holds its SHA-256.
 * A gateway restart signs everyone out; nothing about a session is written to the data folder.
 */
export class ConsoleSessions {
  private readonly sessions = new Map<string, ConsoleSession>();

  constructor(
    private readonly limits: ConsoleSessionLimits = DEFAULT_CONSOLE_SESSION_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Starts a session; returns the cookie value (the session id) and the session. */
  start(actor: string, approverToken: string): { id: string; session: ConsoleSession } {
    this.sweep();
    const id = randomBytes(32).toString('base64url');
    const at = this.now();
    const session: ConsoleSession = { actor, approverToken, csrfToken: randomBytes(32).toString('base64url'), startedAt: at, lastSeenAt: at };
    this.sessions.set(digest(id), session);
    return { id, session };
  }

  /** The live session a cookie value names, or `undefined`; a found session counts as seen now. */
  find(id: string | undefined): ConsoleSession | undefined {
    if (id === undefined || !/^[\w-]{43}$/.test(id)) return undefined;
    const key = digest(id);
    const session = this.sessions.get(key);
    if (session === undefined) return undefined;
    const at = this.now();
    if (at - session.lastSeenAt > this.limits.idleMs || at - session.startedAt > this.limits.maxAgeMs) {
      this.sessions.delete(key);
      return undefined;
    }
    session.lastSeenAt = at;
    return session;
  }

  end(id: string | undefined): void {
    if (id !== undefined) this.sessions.delete(digest(id));
  }

  /** How long a cookie should live, in seconds: the idle limit (renewed with every answer). */
  cookieMaxAgeSeconds(): number {
    return Math.floor(this.limits.idleMs / 1000);
  }

  private sweep(): void {
    const at = this.now();
    for (const [key, session] of this.sessions) {
      if (at - session.lastSeenAt > this.limits.idleMs || at - session.startedAt > this.limits.maxAgeMs) this.sessions.delete(key);
    }
  }
}

/** Whether `given` is the session's anti-forgery token, compared in constant time. */
export function csrfMatches(session: ConsoleSession, given: string | string[] | undefined): boolean {
  if (typeof given !== 'string') return false;
  const expected = Buffer.from(session.csrfToken);
  const actual = Buffer.from(given);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** The value of the console cookie in a `Cookie` header. */
export function sessionCookieOf(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CONSOLE_COOKIE) return value.join('=');
  }
  return undefined;
}

function digest(id: string): string {
  return createHash('sha256').update(id).digest('hex');
}
