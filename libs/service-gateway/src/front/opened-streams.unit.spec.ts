import { describe, expect, it } from 'vitest';
import { OpenedStreams } from './mcp-http-front';

describe('the response streams a session opened in this process', () => {
  it('given streams opened over a time longer than the retention, when another opens, then only those within the retention are kept and known', () => {
    let now = 0;
    const streams = new OpenedStreams(1_000, () => now);
    for (let i = 0; i < 10_000; i += 1) {
      now = i;
      streams.add(`stream-${i}`);
    }
    expect(streams.size).toBe(1_001);
    expect(streams.has('stream-8999')).toBe(true);
    expect(streams.has('stream-8998')).toBe(false);
    expect(streams.has('stream-0')).toBe(false);

    now += 2_000;
    expect(streams.has('stream-9999')).toBe(false);
    streams.add('later');
    expect(streams.size).toBe(1);
    expect(streams.has('later')).toBe(true);
  });
});
