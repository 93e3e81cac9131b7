/**
 * Why a turn's signal aborts. Without a reason `abort()` makes a `DOMException`, stack trace and all, and a busy
 * execution asks for a turn behind another on nearly every call; nothing reads the reason.
 */
const TURN_BEHIND = 'another turn for the key waits behind this one';

/**
 * Keyed turns: work for one key runs one at a time, in the order it was asked for; work for other keys is not
 * held up. The command loop takes a turn per execution stream, so writers in one process never race each other
 * for the stream's next revision (a burst of retries would otherwise starve the outcome's append).
 */
export class KeyedTurns<Key> {
  private readonly tails = new Map<Key, { readonly done: Promise<void>; readonly behind: AbortController }>();

  /**
   * Runs `work` once every earlier turn for `key` has finished (whether it succeeded or failed). `work` is given a
   * signal that aborts once another turn for `key` is asked for, behind it: work that may hold something back (an
   * append that may wait for company) stops holding it, since the next turn waits for it.
   */
  run<T>(key: Key, work: (behind: AbortSignal) => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    previous?.behind.abort(TURN_BEHIND);
    const behind = new AbortController();
    const result = (previous?.done ?? Promise.resolve()).then(() => work(behind.signal));
    const tail = {
      done: result.then(
        () => undefined,
        () => undefined,
      ),
      behind,
    };
    this.tails.set(key, tail);
    void tail.done.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
