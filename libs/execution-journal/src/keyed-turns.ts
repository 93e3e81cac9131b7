/**
 * Keyed turns: work for one key runs one at a time, in the order it was asked for; work for other keys is not
 * held up. The command loop takes a turn per execution stream, so writers in one process never race each other
 * for the stream's next revision (a burst of retries would otherwise starve the outcome's append).
 */
export class KeyedTurns<Key> {
  private readonly tails = new Map<Key, { done: Promise<void> | undefined; readonly behind: AbortController }>();

  /**
   * Runs `work` once every earlier turn for `key` has finished (whether it succeeded or failed). `work` is given a
   * signal that aborts once another turn for `key` is asked for, behind it: work that may hold something back (an
   * append that may wait for company) stops holding it, since the next turn waits for it. With no turn ahead, the
   * work starts at once, before `run` returns.
   */
  run<T>(key: Key, work: (behind: AbortSignal) => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    previous?.behind.abort();
    const tail: { done: Promise<void> | undefined; readonly behind: AbortController } = { done: undefined, behind: new AbortController() };
    // The tail is in place before the work starts: a turn asked from within it waits behind it.
    this.tails.set(key, tail);
    const start = () => work(tail.behind.signal);
    let result: Promise<T>;
    if (previous === undefined) {
      try {
        result = start();
      } catch (error) {
        result = Promise.reject(error);
      }
    } else if (previous.done === undefined) {
      // Asked while the turn ahead is still starting (from within its work): its end is known once its `run` returns.
      result = Promise.resolve().then(() => previous.done!.then(start));
    } else {
      result = previous.done.then(start);
    }
    const forget = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    tail.done = result.then(forget, forget);
    return result;
  }
}
