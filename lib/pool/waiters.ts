/** Callers waiting for one moment of the pool (idle, settled, room in the queue): woken all at once. */
export class Waiters {
  #wakers: (() => void)[] = [];

  get size(): number {
    return this.#wakers.length;
  }

  /** Resolves at the next `wakeAll`. */
  wait(): Promise<void> {
    return new Promise((resolve) => this.#wakers.push(resolve));
  }

  /** Resolves every waiting promise; waiters added meanwhile wait for the next call. */
  wakeAll(): void {
    if (this.#wakers.length === 0) return;
    const wakers = this.#wakers;
    this.#wakers = [];
    for (const wake of wakers) wake();
  }
}
