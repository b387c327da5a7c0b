import { SemaphoreTimeoutError } from './errors.js';
import type { BookOptions, RateBooking, RateBudget } from './rate-types.js';

/**
 * Several budgets booked as one (a sharded tenant's stripes, docs/decisions/striped-shard-budgets.md): a
 * booking takes the first budget, from a random one on in turn, that is free at its earliest start
 * (`onlyIfFree`); when every one is booked past it, the one free soonest, under the caller's own
 * `latestStart`. A holder so never queues
 * behind another on one stripe while another stripe idles. Each budget tried costs one read; a budget that
 * fails otherwise (the store throttled, the signal aborted) fails the booking at once, as one budget would.
 */
export class FirstFreeRateBudget implements RateBudget {
  readonly ceiling: number;

  /**
   * `budgets`: at least one, all with the same ceiling. `random`: uniform [0, 1), picks the budget tried
   * first (@default Math.random).
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
    const first = Math.min(count - 1, Math.floor(this.random() * count));
    let soonest: { budget: RateBudget; freeAt: number } | undefined;
    for (let i = 0; i < count; i++) {
      const budget = this.budgets[(first + i) % count]!;
      try {
        return await budget.book({ ...options, onlyIfFree: true });
      } catch (err) {
        if (!(err instanceof SemaphoreTimeoutError)) throw err;
        const freeAt = err.freeAt ?? Number.POSITIVE_INFINITY;
        if (soonest === undefined || freeAt < soonest.freeAt) soonest = { budget, freeAt };
      }
    }
    // Every budget is booked past the earliest start: the one free soonest, as far ahead as the caller allows.
    return soonest!.budget.book(options);
  }
}
