import { afterEach, describe, expect, it } from 'vitest';
import type { ReadAllOptions, ReadAllPage, RecordedEvent } from './event-store';
import { matchesFilter } from './event-filter';
import { CommitListener, NotifiedSubscriptions, type CommitReport } from './notified-subscriptions';

/** A listener whose connections are tokens the test makes succeed, fail or drop. */
class ScriptedListener extends CommitListener<{ readonly id: number }> {
  opened = 0;
  ended = 0;
  current: { readonly id: number } | undefined;
  /** How the next connections go: made at once, made or refused when the test calls `answer`, or refused at once. */
  mode: 'connect' | 'hold' | 'refuse' = 'connect';
  private release: ((ok: boolean) => void) | undefined;

  hear(last: number | undefined, types?: readonly string[], streams?: readonly string[]): void {
    this.report(last, types, streams);
  }

  answer(ok: boolean): void {
    this.release?.(ok);
  }

  drop(): void {
    if (this.current !== undefined) this.lost(this.current);
  }

  protected async open(): Promise<{ readonly id: number } | undefined> {
    this.opened += 1;
    const ok = this.mode === 'hold' ? await new Promise<boolean>((resolve) => (this.release = resolve)) : this.mode === 'connect';
    this.current = ok ? { id: this.opened } : undefined;
    return this.current;
  }

  protected async end(): Promise<void> {
    this.ended += 1;
    this.current = undefined;
  }
}

/** A store of events in memory: appends are silent, as another process's commits are until the listener hears them. */
function memoryStore(options: { pollIntervalMs?: number; heardIsComplete?: boolean } = {}) {
  const events: RecordedEvent[] = [];
  let listener!: ScriptedListener;
  let closed = false;
  let headReads = 0;
  let pageReads = 0;
  const subscriptions = new NotifiedSubscriptions({
    source: {
      async readAll(read: ReadAllOptions): Promise<ReadAllPage> {
        pageReads += 1;
        const after = read.after ?? 0;
        const found = events
          .filter((event) => event.position > after)
          .filter((event) => read.filter === undefined || matchesFilter(read.filter, event))
          .slice(0, read.maxCount ?? 1000);
        return { events: found, lastPosition: found.length === (read.maxCount ?? 1000) ? found.at(-1)!.position : Math.max(after, events.length) };
      },
      headPosition: async () => events.length,
      readCheckpoint: async () => undefined,
      storeCheckpoint: async () => undefined,
    },
    head: async () => {
      headReads += 1;
      return events.length;
    },
    listen: (report: CommitReport) => (listener = new ScriptedListener(report)),
    pollIntervalMs: options.pollIntervalMs ?? 60_000,
    closed: () => closed,
    heardIsComplete: options.heardIsComplete ?? false,
  });
  return {
    subscriptions,
    get listener() {
      return listener;
    },
    get headReads() {
      return headReads;
    },
    get pageReads() {
      return pageReads;
    },
    /** Commits one event without telling anyone; returns its position. */
    commit(type = 'Happened', streamId = 's'): number {
      const position = events.length + 1;
      events.push({ streamId, revision: position - 1, position, id: `e${position}`, type, data: {}, metadata: {}, recordedAt: '2026-01-01T00:00:00.000Z', prev: '', hash: '' });
      return position;
    },
    async close(): Promise<void> {
      closed = true;
      await subscriptions.close();
    },
  };
}

const open: Array<ReturnType<typeof memoryStore>> = [];
function store(options?: Parameters<typeof memoryStore>[0]) {
  const made = memoryStore(options);
  open.push(made);
  return made;
}
afterEach(async () => {
  for (const made of open.splice(0)) await made.close();
});

/** Resolves once `condition` holds, checked every few milliseconds for at most two seconds. */
async function until(condition: () => boolean): Promise<void> {
  for (let tries = 0; !condition(); tries += 1) {
    if (tries > 400) throw new Error('the condition never held');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('NotifiedSubscriptions', () => {
  it('given a subscriber at the head, when the listener hears a commit beyond it, then the subscriber reads it', async () => {
    const made = store();
    const seen: number[] = [];
    const subscription = made.subscriptions.subscribe((event) => void seen.push(event.position));
    await subscription.caughtUp;
    made.listener.hear(made.commit());
    await until(() => seen.length === 1);
    expect(seen).toEqual([1]);
    expect(made.listener.opened).toBe(1);
  });

  it('given a subscriber at the head, when this process wakes it after its own commit, then it reads it', async () => {
    const made = store();
    const seen: number[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.position)).caughtUp;
    made.subscriptions.wake(made.commit());
    await until(() => seen.length === 1);
  });

  it('given complete notifications and a filtered subscriber at the head, when a commit of another type is heard, then it does not read; one of its type wakes it', async () => {
    const made = store({ heardIsComplete: true });
    const seen: string[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.type), { filter: { eventTypes: ['Wanted'] } }).caughtUp;
    const reads = made.pageReads;
    made.listener.hear(made.commit('Other'), ['Other']);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(made.pageReads).toBe(reads);
    made.listener.hear(made.commit('Wanted'), ['Wanted']);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['Wanted']);
  });

  it('given a subscriber of one stream prefix at the head, when a commit of other streams is heard, then it does not read; one of its streams wakes it, and one whose streams are not named does too', async () => {
    const made = store({ heardIsComplete: true });
    const seen: string[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.streamId), { filter: { streamPrefixes: ['agent-'] } }).caughtUp;
    const reads = made.pageReads;
    made.listener.hear(made.commit('Happened', 'execution-1'), ['Happened'], ['execution-1']);
    made.subscriptions.wake(made.commit('Happened', 'execution-2'), ['Happened'], ['execution-2']);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(made.pageReads).toBe(reads);
    made.listener.hear(made.commit('Happened', 'agent-ada'), ['Happened'], ['execution-3', 'agent-ada']);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['agent-ada']);
    made.listener.hear(made.commit('Happened', 'agent-bo'), ['Happened']);
    await until(() => seen.length === 2);
    expect(seen).toEqual(['agent-ada', 'agent-bo']);
  });

  it('given complete notifications and a subscriber whose filter names an empty list of types, when a commit of a named type is heard, then it reads it', async () => {
    const made = store({ heardIsComplete: true });
    const seen: string[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.type), { filter: { eventTypes: [] } }).caughtUp;
    made.listener.hear(made.commit('Happened'), ['Happened']);
    await until(() => seen.length === 1);
    expect(seen).toEqual(['Happened']);
  });

  it('given complete notifications heard since the listener connected, when a subscriber waits again, then it decides without reading the head', async () => {
    const made = store({ heardIsComplete: true });
    const seen: number[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.position)).caughtUp;
    // The head is read when the listener connects; once that read stands for what came before, waits need none.
    await new Promise((resolve) => setTimeout(resolve, 20));
    const headReads = made.headReads;
    for (let n = 1; n <= 3; n += 1) {
      made.listener.hear(made.commit(), ['Happened']);
      await until(() => seen.length === n);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(made.headReads).toBe(headReads);
  });

  it('given complete notifications, when asked whether a type was committed after a position, then it answers from what was heard once a commit at the position asked for is', async () => {
    const made = store({ heardIsComplete: true });
    // Not listening yet: it cannot tell, and asks the listener to connect.
    expect(await made.subscriptions.heardSince(0, 0, ['Locked'], 50)).toBeUndefined();
    await until(() => made.listener?.current !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    made.listener.hear(made.commit('Happened'), ['Happened']);
    expect(await made.subscriptions.heardSince(0, 1, ['Locked'], 50)).toEqual({ changed: false, through: 1 });
    // A commit of position 3 was made but nothing at or past it was heard yet: the answer waits for it.
    made.commit('Locked');
    const third = made.commit('Happened');
    const answer = made.subscriptions.heardSince(1, third, ['Locked'], 1_000);
    made.listener.hear(2, ['Locked']);
    made.listener.hear(third, ['Happened']);
    expect(await answer).toEqual({ changed: true, through: 3 });
    expect(await made.subscriptions.heardSince(3, 3, ['Locked'], 50)).toEqual({ changed: false, through: 3 });
    // Nothing at position 4 is ever heard: after the wait it cannot tell.
    expect(await made.subscriptions.heardSince(3, 4, ['Locked'], 30)).toBeUndefined();
    // A commit whose types were not named may be of any type.
    made.listener.hear(made.commit('Locked'));
    expect(await made.subscriptions.heardSince(3, 4, ['Locked'], 50)).toEqual({ changed: true, through: 4 });
  });

  it('given the listening connection drops, then heardSince cannot tell until the head it reconnected at is read, and that head counts as a change', async () => {
    const made = store({ heardIsComplete: true });
    await made.subscriptions.subscribe(() => undefined).caughtUp;
    await new Promise((resolve) => setTimeout(resolve, 20));
    made.commit('Locked');
    made.listener.drop();
    expect(await made.subscriptions.heardSince(0, 0, ['Locked'], 50)).toBeUndefined();
    await until(() => made.listener.current !== undefined);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await made.subscriptions.heardSince(0, 1, ['Locked'], 50)).toEqual({ changed: true, through: 1 });
  });

  it('given incomplete notifications, when asked, then it cannot tell', async () => {
    const made = store();
    await made.subscriptions.subscribe(() => undefined).caughtUp;
    expect(await made.subscriptions.heardSince(0, 0, ['Locked'], 50)).toBeUndefined();
  });

  it('given the listening connection drops, then every waiter is woken to read, and the next wait listens again', async () => {
    const made = store();
    const seen: number[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.position)).caughtUp;
    // A commit the dropped connection never heard of.
    made.commit();
    made.listener.drop();
    await until(() => seen.length === 1);
    await until(() => made.listener.opened === 2);
    expect(made.listener.listening).toBe(true);
  });

  it('given the listener cannot connect, when another process commits, then the poll finds it', async () => {
    const made = store({ pollIntervalMs: 20 });
    made.listener.mode = 'refuse';
    const seen: number[] = [];
    await made.subscriptions.subscribe((event) => void seen.push(event.position)).caughtUp;
    made.commit();
    await until(() => seen.length === 1);
    // The poll also tried to listen again.
    expect(made.listener.opened).toBeGreaterThan(1);
  });

  it('given a subscriber whose wait is making the listening connection, when it is stopped, then the stop ends at once', async () => {
    const made = store();
    made.listener.mode = 'hold';
    const subscription = made.subscriptions.subscribe(() => undefined);
    await until(() => made.listener.opened === 1);
    await subscription.stop();
    made.listener.answer(true);
  });

  it('given a listener still connecting, when the subscriptions close, then the connection made is ended and never listens', async () => {
    const made = store();
    made.listener.mode = 'hold';
    const subscription = made.subscriptions.subscribe(() => undefined);
    await until(() => made.listener.opened === 1);
    const closing = made.close();
    await subscription.done;
    made.listener.answer(true);
    await closing;
    expect(made.listener.ended).toBe(1);
    expect(made.listener.listening).toBe(false);
  });
});
