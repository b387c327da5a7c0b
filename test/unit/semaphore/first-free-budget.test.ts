// FirstFreeRateBudget (a sharded tenant's stripes booked as one): the first budget free at the earliest
// start, from a random one on in turn; else the one free soonest, under the caller's latest start; any
// other failure at once.
import { describe, expect, it } from 'vitest';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import { FirstFreeRateBudget } from '../../../lib/semaphore/first-free-budget.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../lib/semaphore/memory-rate-budget.js';
import type { BookOptions, RateBudget } from '../../../lib/semaphore/rate-types.js';

const NOW = 1_700_000_000_000;
const now = () => NOW;
const options = (over: Partial<BookOptions> = {}): BookOptions => ({
  writes: 10,
  latestStart: NOW + 10_000,
  writeBy: NOW + 60_000,
  ...over,
});

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
  const bookAhead = (k: number, ms: number) =>
    budgets[k]!.book(options({ writes: ms / 10, latestStart: NOW + 60_000 }));
  return { budgets, calls, bookAhead };
}

describe('FirstFreeRateBudget', () => {
  it('books the budget `random` picks when it is free: one booking, no other budget read', async () => {
    const { budgets, calls } = stripes();
    const all = new FirstFreeRateBudget('whale', budgets, () => 0.6);
    const booking = await all.book(options());
    expect(booking).toMatchObject({ startAt: NOW, writes: 10, queued: false });
    expect(calls).toEqual(['stripe-2']);
  });

  it('passes over budgets booked ahead, in turn from the one picked, to the first free one', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(3, 2_000);
    await bookAhead(0, 2_000);
    calls.length = 0;
    const booking = await new FirstFreeRateBudget('whale', budgets, () => 0.8).book(options());
    expect(calls).toEqual(['stripe-3', 'stripe-0', 'stripe-1']);
    expect(booking).toMatchObject({ startAt: NOW, queued: false });
  });

  it('every budget booked ahead: books the one free soonest, queued, within the latest start', async () => {
    const { budgets, calls, bookAhead } = stripes();
    for (const [k, ms] of [
      [0, 3_000],
      [1, 1_000],
      [2, 2_000],
      [3, 4_000],
    ] as const)
      await bookAhead(k, ms);
    calls.length = 0;
    const booking = await new FirstFreeRateBudget('whale', budgets, () => 0).book(options());
    expect(calls).toEqual(['stripe-0', 'stripe-1', 'stripe-2', 'stripe-3', 'stripe-1']);
    expect(booking).toMatchObject({ startAt: NOW + 1_000, queued: true });
  });

  it('every budget booked past the latest start: SemaphoreTimeoutError with the soonest first free slot', async () => {
    const { budgets, bookAhead } = stripes();
    for (const k of [0, 1, 2, 3]) await bookAhead(k, 5_000 + k * 1_000);
    const all = new FirstFreeRateBudget('whale', budgets, () => 0.3);
    const failed = await all.book(options({ latestStart: NOW + 1_000 })).catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(SemaphoreTimeoutError);
    expect((failed as SemaphoreTimeoutError).freeAt).toBe(NOW + 5_000);
  });

  it('a failure other than a busy budget fails the booking at once, trying no other', async () => {
    const { budgets, calls } = stripes();
    const throttled = Object.assign(new Error('throttled'), {
      name: 'ProvisionedThroughputExceededException',
    });
    const failing: RateBudget = { name: 'bad', ceiling: 100, book: () => Promise.reject(throttled) };
    const all = new FirstFreeRateBudget('whale', [failing, ...budgets], () => 0);
    await expect(all.book(options())).rejects.toBe(throttled);
    expect(calls).toEqual([]);
  });

  it('needs at least one budget', () => {
    expect(() => new FirstFreeRateBudget('none', [])).toThrow(RangeError);
  });
});
