// TwoChoiceRateBudget (a sharded tenant's stripes booked as one): a random budget, booked as one budget is;
// when it is booked past the latest start, a second one at random among the others; any other failure at
// once. Writes that outlast a round of one budget at its ceiling spread over the budgets free now.
import { describe, expect, it } from 'vitest';
import { SemaphoreTimeoutError } from '../../../lib/semaphore/errors.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../lib/semaphore/memory-rate-budget.js';
import type { BookOptions, RateBooking, RateBudget } from '../../../lib/semaphore/rate-types.js';
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
  /** The writes each book call asked for, by budget name, in call order. */
  const asked: Array<[string, number]> = [];
  const budgets: RateBudget[] = [0, 1, 2, 3].map((k) => {
    const inner = new MemoryRateBudget({ name: `stripe-${k}`, ceiling: 100, table, now });
    return {
      name: inner.name,
      ceiling: inner.ceiling,
      book: (o: BookOptions) => {
        calls.push(inner.name);
        asked.push([inner.name, o.writes]);
        return inner.book(o);
      },
    };
  });
  /** Books `ms` of budget `k`'s slots ahead of NOW. */
  const bookAhead = async (k: number, ms: number) => {
    await budgets[k]!.book(options({ writes: ms / 10, latestStart: NOW + 60_000 }));
    calls.length = 0;
    asked.length = 0;
  };
  return { budgets, calls, asked, bookAhead, table };
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

describe('TwoChoiceRateBudget: writes that outlast a round of one budget', () => {
  // At 100 writes/s a round (1 s) holds 100 writes; 250 need three budgets' rounds.
  const spread = (budgets: RateBudget[], random: () => number = () => 0) =>
    new TwoChoiceRateBudget('whale', budgets, random, now);

  it("its ceiling is the budgets' together", () => {
    const { budgets } = stripes();
    expect(spread(budgets).ceiling).toBe(400);
  });

  it('spread over as many free budgets as their rounds need, each ending with the first: paced at the sum', async () => {
    const { budgets, calls, asked, table } = stripes();
    const booking = await spread(budgets).book(options({ writes: 250 }));
    expect(new Set(calls).size).toBe(3);
    // The first its share (250 / 3), each other the writes left that fit by the first one's end.
    expect(asked.map(([, writes]) => writes)).toEqual([84, 166, 82]);
    expect(booking).toMatchObject({ rate: 300, startAt: NOW, queued: false });
    // The window they share ends with the shortest piece (82 slots): 246 writes at 300/s.
    expect(booking.writes).toBe(246);
    expect(booking.endsAt).toBe(NOW + 820);
    // Each budget's schedule holds its own piece, at its own rate.
    const freeAts = calls.map((name) => table.item(name)!.freeAt - NOW);
    expect(freeAts).toEqual([840, 840, 820]);
    const untouched = [0, 1, 2, 3].map((k) => `stripe-${k}`).filter((name) => !calls.includes(name));
    expect(untouched.map((name) => table.item(name))).toEqual([undefined]);
  });

  it('writes a round holds book one budget, as before', async () => {
    const { budgets, calls } = stripes();
    const booking = await spread(budgets).book(options({ writes: 100 }));
    expect(calls).toHaveLength(1);
    expect(booking).toMatchObject({ rate: 100, writes: 100 });
  });

  it('a budget booked ahead past one slot is busy: the others are spread over', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(2, 300);
    // Order from random 0: 1, 2, 3, 0 (a Fisher-Yates shuffle that always swaps with index 0).
    const booking = await spread(budgets).book(options({ writes: 400 }));
    expect(calls).toEqual(['stripe-1', 'stripe-2', 'stripe-3', 'stripe-0']);
    expect(booking.rate).toBe(300);
    expect(booking.writes).toBe(300);
  });

  it('the first budget tried busy: the writes are booked in one, by two choices', async () => {
    const { budgets, calls, bookAhead } = stripes();
    await bookAhead(1, 300);
    const booking = await spread(budgets).book(options({ writes: 250 }));
    // The spread's first try (stripe 1, busy), then the two choices' first pick (stripe 0, free): all 250.
    expect(calls).toEqual(['stripe-1', 'stripe-0']);
    expect(booking).toMatchObject({ rate: 100, writes: 250, startAt: NOW });
  });

  it('two budgets found busy end the search; the first alone holds its share', async () => {
    const { budgets, calls, asked, bookAhead } = stripes();
    for (const k of [0, 2, 3]) await bookAhead(k, 300);
    const booking = await spread(budgets).book(options({ writes: 400 }));
    expect(calls).toEqual(['stripe-1', 'stripe-2', 'stripe-3']);
    expect(asked[0]).toEqual(['stripe-1', 100]);
    expect(booking).toMatchObject({ rate: 100, writes: 100, startAt: NOW });
  });

  it('a store failure after the first piece keeps the pieces booked so far', async () => {
    const { budgets, calls } = stripes();
    const throttled = Object.assign(new Error('throttled'), {
      name: 'ProvisionedThroughputExceededException',
    });
    const failing: RateBudget = { name: 'bad', ceiling: 100, book: () => Promise.reject(throttled) };
    // Order from random 0: 1, 2, 3 (the failing one), 0.
    const booking = await spread([budgets[0]!, budgets[1]!, budgets[2]!, failing]).book(
      options({ writes: 400 }),
    );
    expect(calls).toEqual(['stripe-1', 'stripe-2']);
    expect(booking).toMatchObject({ rate: 200, writes: 200 });
  });

  it("a piece that adds nothing to the first one's window is left unused, its report empty", async () => {
    const reports: unknown[] = [];
    const fake = (startAt: number, endsAt: number, rate: number): RateBudget => ({
      name: `fake-${startAt}`,
      ceiling: 100,
      book: async (): Promise<RateBooking> => ({
        rate,
        startAt,
        endsAt,
        writes: Math.round(((endsAt - startAt) * rate) / 1000),
        bookedAt: NOW,
        queued: false,
        step: async () => ({ rate, decreasedAt: 0 }),
        report: async (report) => {
          reports.push({ startAt, report });
        },
      }),
    });
    // The first spans a second; the second starts 900 ms in: 100 ms at 200/s is 20 writes, under 100.
    const booking = await new TwoChoiceRateBudget(
      'whale',
      // Order from random 0.99: as given.
      [fake(NOW, NOW + 1_000, 100), fake(NOW + 900, NOW + 1_000, 100)],
      () => 0.99,
      now,
    ).book(options({ writes: 200 }));
    expect(booking).toMatchObject({ startAt: NOW, writes: 100, rate: 100 });
    expect(reports).toEqual([{ startAt: NOW + 900, report: { accepted: 0, throttled: 0, starved: false } }]);
  });

  it('a spread booking steps and reports every piece with the whole round; its view is their rates summed', async () => {
    const { budgets, calls, table } = stripes();
    const booking = await spread(budgets).book(options({ writes: 200 }));
    expect(calls).toHaveLength(2);
    // Half of a round refused: each stripe cuts by its share, to 50.
    const view = await booking.step({ accepted: 50, throttled: 50, starved: false });
    expect(view.rate).toBe(100);
    expect(calls.map((name) => table.item(name)!.rate)).toEqual([50, 50]);
    await booking.report({ accepted: 10, throttled: 0, starved: false });
    expect(calls.map((name) => table.item(name)!.rate)).toEqual([50, 50]);
  });
});
