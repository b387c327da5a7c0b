// observeBudgets: the wrapper the handler puts around every budget factory hands the factory everything a
// budget is built from, the starting rate of a sharded tenant's stripes included (without it every stripe
// was created at the ceiling, in the handler and in bench:fleet).
import { describe, expect, it } from 'vitest';
import { observeBudgets } from '../../../../../lib/ingest/handler/run/observed-budgets.js';
import type { RateBudgetFactory } from '../../../../../lib/ingest/handler/run/rate-holder.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../../../lib/semaphore/memory-rate-budget.js';

describe('observeBudgets', () => {
  it('builds each budget with the name, ceiling and starting rate it was asked for', async () => {
    const table = new MemoryBudgetTable();
    const asked: unknown[][] = [];
    const inner: RateBudgetFactory = (name, ceiling, startRate) => {
      asked.push([name, ceiling, startRate]);
      return new MemoryRateBudget({ name, ceiling, startRate, table });
    };
    const factory = observeBudgets(inner, () => undefined);
    const stripe = factory('stripe-0', 3_200, 200);
    const prefix = factory('prefix', 3_200);
    expect(asked).toEqual([
      ['stripe-0', 3_200, 200],
      ['prefix', 3_200, undefined],
    ]);
    const now = Date.now();
    const booking = await stripe.book({ writes: 1, latestStart: now + 1_000, writeBy: now + 10_000 });
    expect(booking.rate).toBe(200);
    expect(table.item('stripe-0')?.rate).toBe(200);
    await prefix.book({ writes: 1, latestStart: now + 1_000, writeBy: now + 10_000 });
    expect(table.item('prefix')?.rate).toBe(3_200);
  });
});
