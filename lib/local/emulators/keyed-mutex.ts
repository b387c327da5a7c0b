/**
 * Mutual exclusion per key, where one holder may take several keys at once. A holder queues on all its keys
 * in one synchronous step, so holders are totally ordered by when they asked and none can deadlock another.
 */
export class KeyedMutex {
  readonly #tails = new Map<string, Promise<void>>();

  /** Keys held or waited for right now (tests: empty when idle). */
  get busyKeys(): number {
    return this.#tails.size;
  }

  /** Resolves, once every key is free for this holder, to the function that frees them (idempotent). */
  async lock(keys: Iterable<string>): Promise<() => void> {
    let free!: () => void;
    const held = new Promise<void>((resolve) => {
      free = resolve;
    });
    const waits: Promise<void>[] = [];
    for (const key of new Set(keys)) {
      const previous = this.#tails.get(key) ?? Promise.resolve();
      const tail = previous.then(() => held);
      this.#tails.set(key, tail);
      void tail.then(() => {
        if (this.#tails.get(key) === tail) this.#tails.delete(key);
      });
      waits.push(previous);
    }
    await Promise.all(waits);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      free();
    };
  }
}
