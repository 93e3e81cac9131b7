import { describe, expect, it } from 'vitest';
import { ConsoleSessions, csrfMatches, sessionCookieOf } from './console-sessions';

describe('console sessions', () => {
  it('given a session, when it is idle past the limit or older than its maximum age, then it is gone', () => {
    let now = 0;
    const sessions = new ConsoleSessions({ idleMs: 1_000, maxAgeMs: 2_500 }, () => now);
    const { id } = sessions.start('approver:alice', 'oga_token');
    now = 900;
    expect(sessions.find(id)?.actor).toBe('approver:alice');
    now = 1_800;
    expect(sessions.find(id)).toBeDefined();
    now = 2_600;
    expect(sessions.find(id)).toBeUndefined();

    const idle = sessions.start('approver:bob', 'oga_token').id;
    now += 1_001;
    expect(sessions.find(idle)).toBeUndefined();
  });

  it('given a session, when its id is ended or altered, then it is not found', () => {
    const sessions = new ConsoleSessions();
    const { id } = sessions.start('approver:alice', 'oga_token');
    expect(sessions.find(`${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`)).toBeUndefined();
    expect(sessions.find(undefined)).toBeUndefined();
    sessions.end(id);
    expect(sessions.find(id)).toBeUndefined();
  });

  it('given a session, when a header echoes its anti-forgery token, then only the exact token matches', () => {
    const { session } = new ConsoleSessions().start('approver:alice', 'oga_token');
    expect(csrfMatches(session, session.csrfToken)).toBe(true);
    expect(csrfMatches(session, undefined)).toBe(false);
    expect(csrfMatches(session, [session.csrfToken])).toBe(false);
    expect(csrfMatches(session, session.csrfToken.slice(1))).toBe(false);
  });

  it('given a Cookie header, when it holds the console cookie among others, then its value is read', () => {
    expect(sessionCookieOf('a=1; oncegate_console=abc; b=2')).toBe('abc');
    expect(sessionCookieOf('a=1')).toBeUndefined();
    expect(sessionCookieOf(undefined)).toBeUndefined();
  });
});
