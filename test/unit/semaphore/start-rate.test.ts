// A budget's starting rate (`startRate`, docs/fleet-cap.md#state): a missing item is created at it, not at
// the ceiling; from there the control law raises it as starved clean rounds report, and an item that
// exists keeps its rate whatever a process's `startRate`.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { createBudgetRequest, newSchedule } from '../../../lib/semaphore/budget-item.js';
import {
  DynamoRateBudget,
  InvalidSemaphoreOptionsError,
  MemoryBudgetTable,
  MemoryRateBudget,
} from '../../../lib/semaphore/index.js';
import { INCREASE_SHARE, PROBE_HOLD_MS } from '../../../lib/semaphore/tuning.js';

const T0 = 1_000_000;
const book = (budget: MemoryRateBudget, at: number) =>
  budget.book({ writes: 10, latestStart: at + 60_000, writeBy: at + 60_000 });

describe('a rate budget started below its ceiling', () => {
  it('creates a missing item at startRate, and the law doubles it per second of starved clean rounds until a decrease', async () => {
    let now = T0;
    const table = new MemoryBudgetTable();
    const budget = new MemoryRateBudget({ ceiling: 3200, startRate: 200, table, now: () => now });
    const first = await book(budget, now);
    expect(first.rate).toBe(200);
    expect(table.item('memory')?.rate).toBe(200);
    now += 1000;
    await first.report({ accepted: 10, throttled: 0, starved: true });
    expect(table.item('memory')?.rate).toBe(400);
    // An overload finds the limit: from there the rate climbs a step a second.
    const second = await book(budget, now);
    now += 1000;
    await second.report({ accepted: 5, throttled: 5, starved: true });
    expect(table.item('memory')?.rate).toBe(200);
    now += PROBE_HOLD_MS;
    const third = await book(budget, now);
    now += 1000;
    await third.report({ accepted: 10, throttled: 0, starved: true });
    expect(table.item('memory')?.rate).toBe(200 + 3200 * INCREASE_SHARE);
  });

  it('leaves an existing item at its rate: startRate only creates', async () => {
    const table = new MemoryBudgetTable();
    await book(new MemoryRateBudget({ ceiling: 3200, table, now: () => T0 }), T0);
    const later = new MemoryRateBudget({ ceiling: 3200, startRate: 100, table, now: () => T0 });
    expect((await book(later, T0)).rate).toBe(3200);
  });

  it('starts at the ceiling by default, and the item request carries the starting rate', () => {
    expect(newSchedule(350).rate).toBe(350);
    expect(createBudgetRequest('t', 'p', 218.75).Item?.rate).toEqual({ N: '218.75' });
  });

  it('refuses a startRate that is not a positive rate up to the ceiling, naming it', () => {
    const unused = {} as DynamoDBClient;
    for (const startRate of [0, -1, Number.NaN, 3201, 1e-7]) {
      expect(() => new MemoryRateBudget({ ceiling: 3200, startRate })).toThrow(InvalidSemaphoreOptionsError);
      expect(
        () => new DynamoRateBudget({ client: unused, tableName: 't', name: 'p', ceiling: 3200, startRate }),
      ).toThrowError(expect.objectContaining({ message: expect.stringContaining('startRate') }));
    }
  });
});
