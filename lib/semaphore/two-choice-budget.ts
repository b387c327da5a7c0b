import { SemaphoreTimeoutError } from './errors.js';
import type { BookOptions, RateBooking, RateBudget } from './rate-types.js';

/**
 * Several budgets booked as one (a sharded tenant's stripes, docs/decisions/striped-shard-budgets.md): a
 * booking takes a budget picked at random, as one budget would be booked; only when that one is booked past
 * the caller's `latestStart` (the holder would defer its records) does it try a second, picked at random
 * among the others, and when both refuse, the answer names the sooner first free slot. The second try costs
 * one read (and a write when it books), where a deferral costs a message sent back to the queue and a later
 * delivery; a booking its first pick can take costs what one budget's does. A failure other than a busy
 * budget (the store throttled, the signal aborted) fails the booking at once.
 */
export class TwoChoiceRateBudget implements RateBudget {
  readonly ceiling: number;

  /**
   * `budgets`: at least one, all with the same ceiling. `random`: uniform [0, 1), picks the budgets
   * (@default Math.random).
   */
  constructor(
    readonly name: string,
    private readonly budgets: readonly RateBudget[],
    private readonly random: () => number = Math.random,
  ) {
    if (budgets.length === 0) throw new RangeError(`rate budget "${name}": no budgets to book from`);
    this.ceiling = budgets[0]!.ceiling;
  }

  async book(options: BookOptions): Promise<RateBooking> {
    const count = this.budgets.length;
    const a = this.#pick(count);
    const first = this.budgets[a]!;
    if (count === 1) return first.book(options);
    let refused: SemaphoreTimeoutError;
    try {
      return await first.book(options);
    } catch (err) {
      if (!(err instanceof SemaphoreTimeoutError)) throw err;
      refused = err;
    }
    // One of the other budgets, at random.
    const second = this.budgets[(a + 1 + this.#pick(count - 1)) % count]!;
    try {
      return await second.book(options);
    } catch (err) {
      if (!(err instanceof SemaphoreTimeoutError)) throw err;
      const freeAt = (e: SemaphoreTimeoutError) => e.freeAt ?? Number.POSITIVE_INFINITY;
      throw freeAt(err) < freeAt(refused) ? err : refused;
    }
  }

  /** A uniform index in 0..n-1. */
  #pick(n: number): number {
    return Math.min(n - 1, Math.floor(this.random() * n));
  }
}
