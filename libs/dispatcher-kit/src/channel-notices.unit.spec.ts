import { describe, expect, it } from 'vitest';
import { noticeData } from './channel-notices';

const NOW = '2026-12-04T15:00:00.000Z';

describe("a channel's notices", () => {
  it('given a notice with facts, then it is recorded with the channel, the dispatcher and the time, its message cut to 500 characters', () => {
    expect(noticeData('mcp', 'dispatcher-mcp@h1', { kind: 'upstream_tools_changed', message: 'x'.repeat(600), details: { upstream: 'ledger', added: ['a'] } }, NOW)).toEqual({
      channel: 'mcp',
      dispatcherId: 'dispatcher-mcp@h1',
      kind: 'upstream_tools_changed',
      message: 'x'.repeat(500),
      details: { upstream: 'ledger', added: ['a'] },
      noticedAt: NOW,
    });
    expect(noticeData('mcp', 'd', { kind: 'restarted', message: 'child restarted' }, NOW)).toMatchObject({ details: null });
  });

  it.each([
    ['a kind with spaces', { kind: 'Tools Changed', message: 'm' }, /kind "Tools Changed" is not \[a-z\]/],
    ['a blank message', { kind: 'k', message: ' ' }, /the message must be a non-empty string/],
    ['details that are an array', { kind: 'k', message: 'm', details: ['a'] }, /details must be a JSON object/],
    ['details of 9 KB', { kind: 'k', message: 'm', details: { big: 'x'.repeat(9000) } }, /details are \d+ bytes of JSON, more than 8192/],
    ['details holding a BigInt', { kind: 'k', message: 'm', details: { n: 1n } }, /details are not JSON/],
    ['null', null, /a notice is an object/],
  ])('given %s, then it is refused saying why', (_title, notice, why) => {
    expect(noticeData('mcp', 'd', notice as never, NOW)).toMatch(why);
  });
});
