import { describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit';

describe('GroupCommit', () => {
  it('given items queued in one turn, then they share one write, and items queued during a write share the next', async () => {
    const groups: number[][] = [];
    let release: () => void = () => undefined;
    const queue = new GroupCommit<number>(100, async (group) => {
      groups.push([...group]);
      if (groups.length === 1) await new Promise<void>((resolve) => (release = resolve));
    });
    queue.add(1);
    queue.add(2);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(groups).toEqual([[1, 2]]);
    queue.add(3);
    queue.add(4);
    release();
    await queue.drained();
    expect(groups).toEqual([[1, 2], [3, 4]]);
  });

  it('given more items than a group takes, then they are written in groups of at most that many, in order', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(2, async (group) => void groups.push([...group]));
    for (const item of [1, 2, 3, 4, 5]) queue.add(item);
    await queue.drained();
    expect(groups).toEqual([[1, 2], [3, 4], [5]]);
  });

  it('given nothing queued, then drained resolves at once; given an item queued after a drain, then it is written too', async () => {
    const written: number[] = [];
    const queue = new GroupCommit<number>(10, async (group) => void written.push(...group));
    await queue.drained();
    queue.add(1);
    await queue.drained();
    queue.add(2);
    await queue.drained();
    expect(written).toEqual([1, 2]);
  });
});

describe('GroupCommit: items that may wait', () => {
  const turn = () => new Promise((resolve) => setImmediate(resolve));

  it('given a deferrable item alone, then it is not written at once, and is written alone once it has waited', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(10, async (group) => void groups.push([...group]), 30);
    queue.add(1, true);
    await turn();
    await turn();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(groups).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(groups).toEqual([[1]]);
  });

  it('given a deferrable item, when an item that may not wait follows, then both are written at once in one group', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(10, async (group) => void groups.push([...group]), 10_000);
    queue.add(1, true);
    await new Promise((resolve) => setTimeout(resolve, 5));
    queue.add(2);
    await turn();
    await turn();
    expect(groups).toEqual([[1, 2]]);
  });

  it('given a deferrable item queued during a write, then it is not written alone after it, but with the next item or after its wait', async () => {
    const groups: number[][] = [];
    let release: () => void = () => undefined;
    const queue = new GroupCommit<number>(10, async (group) => {
      groups.push([...group]);
      if (groups.length === 1) await new Promise<void>((resolve) => (release = resolve));
    }, 40);
    queue.add(1);
    await turn();
    await turn();
    queue.add(2, true);
    release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(groups).toEqual([[1]]);
    queue.add(3);
    await turn();
    await turn();
    expect(groups).toEqual([[1], [2, 3]]);
  });

  it('given deferrable items waiting, when the queue is drained, then they are written at once', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(10, async (group) => void groups.push([...group]), 10_000);
    queue.add(1, true);
    queue.add(2, true);
    await queue.drained();
    expect(groups).toEqual([[1, 2]]);
  });

  it('given a deferrable item with a signal, then it waits like one marked true, and once the signal aborts it is written at once, alone', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(10, async (group) => void groups.push([...group]), 10_000);
    const hurry = new AbortController();
    queue.add(1, hurry.signal);
    queue.add(2, true);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(groups).toEqual([]);
    hurry.abort();
    await turn();
    await turn();
    // The item that waits without a signal goes along: it is queued ahead of nothing that may not wait.
    expect(groups).toEqual([[1, 2]]);
  });

  it('given a signal already aborted, then the item is written at once; given a signal that aborts after its item was written, then nothing more is written', async () => {
    const groups: number[][] = [];
    const queue = new GroupCommit<number>(10, async (group) => void groups.push([...group]), 10_000);
    const late = new AbortController();
    queue.add(1, late.signal);
    queue.add(2, AbortSignal.abort());
    await turn();
    await turn();
    expect(groups).toEqual([[1, 2]]);
    late.abort();
    queue.add(3, true);
    await turn();
    await turn();
    expect(groups).toEqual([[1, 2]]);
    await queue.drained();
    expect(groups).toEqual([[1, 2], [3]]);
  });
});
