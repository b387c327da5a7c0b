/**
 * The `seq` a `Producer` gives a write that has none: epoch milliseconds x 1000 plus a counter, so it reads
 * like SQS's `SentTimestamp` x 1000 (the handler's stand-in for messages without `seq`) and never goes
 * backwards within a process, even when the wall clock does (NTP steps) or 1,000 writes share a millisecond
 * (it then runs ahead of the clock until the clock catches up).
 */
export class MonotonicSeq {
  readonly #now: () => number;
  #last = -1;

  /** @param now the clock in epoch milliseconds. Default `Date.now`. */
  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** A safe integer greater than every earlier one from this source. */
  next(): number {
    const fromClock = Math.floor(this.#now()) * 1000;
    this.#last = Number.isSafeInteger(fromClock) && fromClock > this.#last ? fromClock : this.#last + 1;
    return this.#last;
  }
}

/** The process-wide source every `Producer` uses unless given its own: one order per process. */
export const processSeq = new MonotonicSeq();
