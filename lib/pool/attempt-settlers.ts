// How the scheduler learns that an attempt's work settled, without allocating callbacks per attempt.
import type { Attempt } from './task-state.js';

/** The scheduler's handler of a settled attempt: `failed` says whether `error` or `value` is the outcome. */
export type AttemptSettled = (attempt: Attempt, value: unknown, error: unknown, failed: boolean) => void;

// The built-in `then`: its reactions run exactly once, even on a promise given an own `then` property. A
// settler is reused after its first call, so a second call must never happen.
const promiseThen = Promise.prototype.then;

/**
 * Watches attempts' promises with reusable fulfil/reject callback pairs (fastq's reusify idea): one pair
 * per attempt in flight at once, created the first time that many are in flight and reused afterwards,
 * instead of two closures (and their context) per attempt. A settler goes back to the free list before the
 * scheduler handles the outcome, so the attempt started from that handler can take it at once. Nothing
 * reusable here is ever handed to task code.
 */
export class AttemptSettlers {
  #free: Settler | undefined = undefined;
  readonly #settled: AttemptSettled;

  constructor(settled: AttemptSettled) {
    this.#settled = settled;
  }

  /** Calls the scheduler's handler once `promise` (a native promise) settles. */
  watch(attempt: Attempt, promise: Promise<unknown>): void {
    let settler = this.#free;
    if (settler === undefined) settler = new Settler(this.#settle);
    else this.#free = settler.nextFree;
    settler.nextFree = undefined;
    settler.attempt = attempt;
    promiseThen.call(promise, settler.fulfilled, settler.rejected);
  }

  /** What a settler calls as it fires: back to the free list, then the outcome to the scheduler. */
  readonly #settle: SettlerFired = (settler, value, error, failed) => {
    const attempt = settler.attempt!;
    settler.attempt = undefined;
    settler.nextFree = this.#free;
    this.#free = settler;
    this.#settled(attempt, value, error, failed);
  };
}

type SettlerFired = (settler: Settler, value: unknown, error: unknown, failed: boolean) => void;

/** One fulfil/reject callback pair, watching one attempt at a time. */
class Settler {
  attempt: Attempt | undefined = undefined;
  nextFree: Settler | undefined = undefined;
  readonly fulfilled: (value: unknown) => void;
  readonly rejected: (error: unknown) => void;

  constructor(fired: SettlerFired) {
    this.fulfilled = (value) => fired(this, value, undefined, false);
    this.rejected = (error) => fired(this, undefined, error, true);
  }
}
