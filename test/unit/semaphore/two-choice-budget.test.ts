// TwoChoiceRateBudget (a sharded tenant's stripes booked as one): a random budget, booked as one budget is;
// when it is booked past the latest start, a second one at random among the others; any other failure at
// once.
import { describe, expect, it } from 'vitest';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../lib/semaphore/memory-rate-budget.js';
import type { BookOptions, RateBudget } from '../../../lib/semaphore/rate-types.js';
import { TwoChoiceRateBudget } from '../../../lib/semaphore/two-choice-budget.js';

const NOW = 1_700_000_000_000;
const now = () => NOW;
const options = (over: Partial<BookOptions> = {}): BookOptions => ({
  writes: 10,
  latestStart: NOW + 500,
  writeBy: NOW + 60_000,
  ...over,
});
/** A random source that returns `values` in turn. */
const cycling = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

/** Four budgets at 100 writes/s over one table, with every book call's budget name recorded. */
function stripes() {
  const table = new MemoryBudgetTable();
  const calls: string[] = [];
  const budgets: RateBudget[] = [0, 1, 2, 3].map((k) => {
    const inner = new MemoryRateBudget({ name: `stripe-${k}`, ceiling: 100, table, now });
    return {
      name: inner.name,
      ceiling: inner.ceiling,
      book: (o: BookOptions) => {
        calls.push(inner.name);
        return inner.book(o);
      },
    };
  });
  /** Books `ms` of budget `k`'s slots ahead of NOW. */
  const bookAhead = async (k: number, ms: number) => {
    await budgets[k]!.book(options({ writes: ms / 10, latestStart: NOW + 60_000 }));
    calls.length = 0;
  };
  return { budgets, calls, bookAhead };
}

describe('TwoChoiceRateBudget', () => {
  it('books the budget `random` picks, as one budget: no other budget read', async () => {
    const { budgets, calls } = stripes();
    const booking = await new TwoChoiceRateBudget('whale', budgets, () => 0.6).book(options());
    expect(booking).toMatchObject({ startAt: NOW, writes: 10, queued: false });
    expect(calls).toEqual(['stripe-2']);
  });

  it('a first pick booked ahead within the latest start is booked, queued: no second read', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(1, 300);
    const booking = await new TwoChoiceRateBudget('whale', budgets, () => 0.3).book(options());
    expect(calls).toEqual(['stripe-1']);
    expect(booking).toMatchObject({ startAt: NOW + 300, queued: true });
  });

  it('a first pick booked past the latest start: a second pick among the others', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(3, 2_000);
    // 0.8 of 4 is stripe 3; then 0.5 of the 3 others (0, 1, 2 after 3) is the second of them: stripe 1.
    const booking = await new TwoChoiceRateBudget('whale', budgets, cycling(0.8, 0.5)).book(options());
    expect(calls).toEqual(['stripe-3', 'stripe-1']);
    expect(booking).toMatchObject({ startAt: NOW, queued: false });
  });

  it('both picks booked past the latest start: SemaphoreTimeoutError with the sooner first free slot, no third try', async () => {
    const { budgets, calls, bookAhead } = stripes();
    for (const k of [0, 1, 2, 3]) await bookAhead(k, 5_000 + k * 1_000);
    const picks: Array<[number, number, number]> = [
      // 0.9: stripe 3 (free at +8,000), then the first of the others: stripe 0 (+5,000), sooner.
      [0.9, 0, 5_000],
      // 0: stripe 0 (+5,000), then 0.99 of the others: stripe 3 (+8,000), later.
      [0, 0.99, 5_000],
    ];
    for (const [a, b, freeIn] of picks) {
      calls.length = 0;
      const failed = await new TwoChoiceRateBudget('whale', budgets, cycling(a, b))
        .book(options())
        .catch((err: unknown) => err);
      expect(failed).toBeInstanceOf(SemaphoreTimeoutError);
      expect((failed as SemaphoreTimeoutError).freeAt).toBe(NOW + freeIn);
      expect(calls).toHaveLength(2);
      expect(new Set(calls).size).toBe(2);
    }
  });

  it('a failure other than a busy budget fails the booking at once, trying no other', async () => {
    const { budgets, calls } = stripes();
    const throttled = Object.assign(new Error('throttled'), {
      name: 'ProvisionedThroughputExceededException',
    });
    const failing: RateBudget = { name: 'bad', ceiling: 100, book: () => Promise.reject(throttled) };
    const all = new TwoChoiceRateBudget('whale', [failing, ...budgets], () => 0);
    await expect(all.book(options())).rejects.toBe(throttled);
    expect(calls).toEqual([]);
  });

  it('one budget is booked as itself; none is an error', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(0, 2_000);
    await expect(new TwoChoiceRateBudget('one', budgets.slice(0, 1)).book(options())).rejects.toBeInstanceOf(
      SemaphoreTimeoutError,
    );
    expect(calls).toEqual(['stripe-0']);
    expect(() => new TwoChoiceRateBudget('none', [])).toThrow(RangeError);
  });
});
