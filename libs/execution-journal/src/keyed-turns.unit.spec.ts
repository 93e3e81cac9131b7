import { describe, expect, it } from 'vitest';
import { KeyedTurns } from './keyed-turns';

describe('KeyedTurns', () => {
  it('given turns for one key, then they run one at a time in the order asked, and a turn for another key is not held up', async () => {
    const turns = new KeyedTurns<string>();
    const log: string[] = [];
    let release: () => void = () => undefined;
    const first = turns.run('a', async () => {
      log.push('a1 start');
      await new Promise<void>((resolve) => (release = resolve));
      log.push('a1 end');
    });
    const second = turns.run('a', async () => void log.push('a2'));
    await turns.run('b', async () => void log.push('b1'));
    expect(log).toEqual(['a1 start', 'b1']);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  });

  it('given a turn running, when another turn for its key is asked, then its signal aborts, without an error made for it; a turn for another key, or none, leaves it alone', async () => {
    const turns = new KeyedTurns<string>();
    const signals: AbortSignal[] = [];
    let release: () => void = () => undefined;
    const first = turns.run('a', async (behind) => {
      signals.push(behind);
      await new Promise<void>((resolve) => (release = resolve));
    });
    await new Promise((resolve) => setImmediate(resolve));
    await turns.run('b', async (behind) => void signals.push(behind));
    expect(signals.map((signal) => signal.aborted)).toEqual([false, false]);
    const second = turns.run('a', async (behind) => void signals.push(behind));
    expect(signals[0]!.aborted).toBe(true);
    // A reason of its own: no DOMException (and its stack trace) made on every turn asked behind another.
    expect(signals[0]!.reason).not.toBeInstanceOf(Error);
    expect(signals[0]!.reason).toMatch(/another turn/);
    release();
    await Promise.all([first, second]);
    // The last turn asked had nothing behind it.
    expect(signals.map((signal) => signal.aborted)).toEqual([true, false, false]);
  });

  it('given a turn that fails, then the turns behind it still run', async () => {
    const turns = new KeyedTurns<string>();
    const failed = turns.run('a', async () => {
      throw new Error('refused');
    });
    const next = turns.run('a', async () => 'ran');
    await expect(failed).rejects.toThrow('refused');
    await expect(next).resolves.toBe('ran');
  });

  it('given a turn asked from within the start of the turn ahead of it, then it still runs after that turn has ended', async () => {
    const turns = new KeyedTurns<string>();
    const log: string[] = [];
    let inner: Promise<void> | undefined;
    let release: () => void = () => undefined;
    const outer = turns.run('a', async () => {
      log.push('outer start');
      inner = turns.run('a', async () => void log.push('inner'));
      await new Promise<void>((resolve) => (release = resolve));
      log.push('outer end');
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(log).toEqual(['outer start']);
    release();
    await Promise.all([outer, inner]);
    expect(log).toEqual(['outer start', 'outer end', 'inner']);
  });
});
