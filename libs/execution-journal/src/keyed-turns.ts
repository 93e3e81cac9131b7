/**
 * Keyed turns: work for one key runs one at a time, in the order it was asked for; work for other keys is not
 * held up. The command loop takes a turn per execution stream, so writers in one process never race each other
 * for the stream's next revision (a burst of retries would otherwise starve the outcome's append).
 */
export class KeyedTurns<Key> {
  private readonly tails = new Map<Key, Promise<void>>();

  /** Runs `work` once every earlier turn for `key` has finished (whether it succeeded or failed). */
  run<T>(key: Key, work: () => Promise<T>): Promise<T> {
    const result = (this.tails.get(key) ?? Promise.resolve()).then(work);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}
