import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  type RateHolderPool,
  type RateWindow,
  runUnderRate,
} from '../../../../../lib/ingest/handler/run/rate-holder.js';
import type { PoolEvents } from '../../../../../lib/pool/events.js';
import type { StartIntervalOptions } from '../../../../../lib/pool/start-pacer.js';
import { withBookingCalls } from '../../../../../lib/semaphore/booking-calls.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../../../lib/semaphore/memory-rate-budget.js';
import type { BookOptions, RateBudget } from '../../../../../lib/semaphore/rate-types.js';
import { MIN_ROUND_WRITES, SLOT_CATCH_UP_MS } from '../../../../../lib/semaphore/tuning.js';

// What a holder tells its pool, and when: the pace and the allowance of paced starts (how many, until
// when) as its slots begin, stretch, end and are booked again. The pool here is driven by the test: it
// records each `setStartInterval` and emits the events a real pool would.

const NAME = 'prefix:b/t=acme/';
const T0 = 1_000_000;
const CATCH_UP = SLOT_CATCH_UP_MS;

type EventName = 'pool:taskCompleted' | 'pool:taskError' | 'pool:taskQueued' | 'pool:taskRetry';

/** A pool the test drives: what it was told (ms since T0), the writes waiting, the listeners it has. */
class DrivenPool implements RateHolderPool {
  readonly told: Array<{ at: number; ms: number } & StartIntervalOptions> = [];
  waiting = 0;
  readonly #listeners = new Map<EventName, Set<(e: never) => void>>();

  setStartInterval(ms: number, options?: StartIntervalOptions): void {
    this.told.push({ at: Date.now() - T0, ms, ...options });
  }

  setConcurrency(): void {}

  async drain(): Promise<void> {}

  on(event: EventName, listener: (e: never) => void): void {
    const set = this.#listeners.get(event) ?? new Set();
    set.add(listener);
    this.#listeners.set(event, set);
  }

  off(event: EventName, listener: (e: never) => void): void {
    this.#listeners.get(event)?.delete(listener);
  }

  emit<K extends EventName>(event: K, e: PoolEvents[K]): void {
    for (const listener of [...(this.#listeners.get(event) ?? [])]) listener(e as never);
  }

  /** Listeners it has (of `event`, or of every event). */
  listening(event?: EventName): number {
    if (event !== undefined) return this.#listeners.get(event)?.size ?? 0;
    return [...this.#listeners.values()].reduce((sum, set) => sum + set.size, 0);
  }

  /** A paced write refused with SlowDown. */
  refuse(): void {
    const error = Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });
    this.emit('pool:taskError', { id: 'w', attempt: 1, error, willRetry: true, durationMs: 0, paced: true });
  }

  /** What it was told after `from` ms (the allowances only: calls that set `starts`). */
  allowances(from = 0) {
    return this.told.filter((t) => t.at >= from && t.starts !== undefined);
  }
}

/** A budget of `ceiling` writes/s on `table` that keeps what it was asked, answering each booking `answerMs` late. */
function budgetOn(table: MemoryBudgetTable, ceiling: number, answerMs = 0) {
  const inner = new MemoryRateBudget({ ceiling, name: NAME, table, random: () => 0 });
  const books: Array<BookOptions & { at: number }> = [];
  const budget: RateBudget = {
    name: inner.name,
    ceiling: inner.ceiling,
    book: async (options) => {
      books.push({ ...options, at: Date.now() - T0 });
      const booking = await inner.book(options);
      if (answerMs > 0) await new Promise((resolve) => setTimeout(resolve, answerMs));
      return booking;
    },
  };
  return { budget, books };
}

function window(deadline: number): RateWindow {
  return { deadline, signal: new AbortController().signal, releaseTimeoutMs: 500 };
}

/**
 * A holder of `writes` writes on `pool` whose work ends when the test calls `finish`; `result` is set when
 * it returns. Its writes are counted from a watch the test sets.
 */
function holder(budget: RateBudget, pool: DrivenPool, writes: number) {
  const watch = { count: 0, stop() {} };
  let finish = () => {};
  const work = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const state: { result?: unknown } = {};
  void runUnderRate(budget, { pool, writes, inFlight: 1 }, window(T0 + 10_000), watch, () => work).then(
    (result) => {
      state.result = result;
    },
  );
  return { watch, finish, state };
}

/** Sends an overloaded round through `pool`: MIN_ROUND_WRITES + 1 writes, more than half of them refused. */
function overloadedRound(pool: DrivenPool, watch: { count: number }) {
  const throttled = MIN_ROUND_WRITES / 2 + 1;
  watch.count += 1;
  for (let i = 1; i < throttled; i++) pool.refuse();
  watch.count += MIN_ROUND_WRITES;
  pool.refuse();
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('runUnderRate: the allowance of paced starts', () => {
  it('allows only the slots still ahead when the booking is answered late, until they end; no timer outlives the holder', async () => {
    const pool = new DrivenPool();
    // 100 writes/s: 40 slots [0, 400) ms, answered at 250 ms.
    const { budget } = budgetOn(new MemoryBudgetTable(), 100, 250);
    const { finish, state } = holder(budget, pool, 40);
    await vi.advanceTimersByTimeAsync(250);
    // (400 + catch-up - 250) ms of slots left at 10 ms each: 17 of the 40 booked.
    expect(pool.allowances()).toEqual([
      { at: 250, ms: 10, catchUpMs: CATCH_UP, starts: 17, withinMs: 400 + CATCH_UP - 250 },
    ]);
    // The writes settle before the slots end: the holder returns at once, and leaves no timer behind.
    await vi.advanceTimersByTimeAsync(50);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.result).toEqual({ rate: 100 });
    expect(vi.getTimerCount()).toBe(0);
    expect(pool.allowances(300)).toEqual([
      {
        at: 300,
        ms: 10,
        catchUpMs: CATCH_UP,
        starts: Number.POSITIVE_INFINITY,
        withinMs: Number.POSITIVE_INFINITY,
      },
    ]);
  });

  it('a cut near the end of its slots stretches the allowance with them, and withdraws it only when the stretched slots are over', async () => {
    const pool = new DrivenPool();
    const { budget, books } = budgetOn(new MemoryBudgetTable(), 100);
    const { watch, finish, state } = holder(budget, pool, 40);
    await vi.advanceTimersByTimeAsync(0);
    expect(pool.allowances()).toEqual([
      { at: 0, ms: 10, catchUpMs: CATCH_UP, starts: 40, withinMs: 400 + CATCH_UP },
    ]);
    // At 380 ms, 20 ms before its slots end, a round halves the rate: the 20 ms left take 40.
    await vi.advanceTimersByTimeAsync(380);
    overloadedRound(pool, watch);
    await vi.advanceTimersByTimeAsync(0);
    expect(pool.told.filter((t) => t.at === 380)).toEqual([
      { at: 380, ms: 20, catchUpMs: CATCH_UP, withinMs: 420 + CATCH_UP - 380 },
      { at: 380, ms: 20, catchUpMs: CATCH_UP },
    ]);
    // Its slots end at 420 ms: the allowance goes at 420 ms + the catch-up, not at the first end's.
    await vi.advanceTimersByTimeAsync(420 + CATCH_UP - 1 - 380);
    expect(pool.allowances(381)).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(pool.allowances(381)).toEqual([
      { at: 420 + CATCH_UP, ms: 20, catchUpMs: CATCH_UP, starts: 0, withinMs: 0 },
    ]);
    // Nothing waits in the pool: it waits for a late write, and books nothing more when the work settles.
    await vi.advanceTimersByTimeAsync(1_000);
    expect(state.result).toBeUndefined();
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.result).toEqual({ rate: 100 });
    expect(books).toHaveLength(1);
    expect(pool.listening()).toBe(0);
  });

  it('writes waiting when its slots are over book again, paced at the rate of their new booking', async () => {
    const pool = new DrivenPool();
    const table = new MemoryBudgetTable();
    const { budget, books } = budgetOn(table, 100);
    const { watch, finish, state } = holder(budget, pool, 40);
    await vi.advanceTimersByTimeAsync(0);
    // Another holder books the slot after this one's 40, [400, 410) ms, and halves the rate at 300 ms.
    const other = await budgetOn(table, 100).budget.book({
      writes: 1,
      latestStart: T0 + 10_000,
      writeBy: T0 + 10_000,
    });
    await vi.advanceTimersByTimeAsync(300);
    await other.step({ accepted: 10, throttled: 10, starved: false });
    // The schedule's slots after 300 ms stretched: free from 300 + 110 x 2 = 520 ms.
    expect(table.item(NAME)?.freeAt).toBe(T0 + 520);
    // At the end of its slots 37 writes were sent and 3 wait (retries of refused ones).
    watch.count = 37;
    pool.waiting = 3;
    await vi.advanceTimersByTimeAsync(400 + CATCH_UP - 300);
    expect(books.map((b) => [b.at, b.writes])).toEqual([
      [0, 40],
      [420, 3],
    ]);
    // 3 slots at 50 writes/s from 520 ms: [520, 580), paced at 20 ms from their first.
    await vi.advanceTimersByTimeAsync(100);
    expect(pool.told.filter((t) => t.at > 420)).toEqual([
      { at: 520, ms: 20, catchUpMs: CATCH_UP },
      { at: 520, ms: 20, catchUpMs: CATCH_UP, starts: 3, withinMs: 580 + CATCH_UP - 520 },
    ]);
    pool.waiting = 0;
    watch.count = 40;
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.result).toEqual({ rate: 50 });
  });

  it('a write that reaches the pool after its slots are over books a slot for it, and the wait for it lets go of the pool', async () => {
    const pool = new DrivenPool();
    const { budget, books } = budgetOn(new MemoryBudgetTable(), 10);
    const { watch, finish, state } = holder(budget, pool, 3);
    // 10 writes/s: 3 slots [0, 300) ms; 2 writes sent in them, the third still behind its read.
    await vi.advanceTimersByTimeAsync(0);
    watch.count = 2;
    await vi.advanceTimersByTimeAsync(300 + CATCH_UP);
    expect(pool.listening('pool:taskQueued')).toBe(1);
    expect(pool.listening('pool:taskRetry')).toBe(1);
    await vi.advanceTimersByTimeAsync(400 - 300 - CATCH_UP);
    pool.waiting = 1;
    pool.emit('pool:taskQueued', { id: 'w3', waiting: 1 });
    await vi.advanceTimersByTimeAsync(0);
    expect(books.map((b) => [b.at, b.writes])).toEqual([
      [0, 3],
      [400, 1],
    ]);
    expect(pool.listening('pool:taskQueued')).toBe(0);
    expect(pool.listening('pool:taskRetry')).toBe(0);
    expect(pool.allowances(400)).toEqual([
      { at: 400, ms: 100, catchUpMs: CATCH_UP, starts: 1, withinMs: 100 + CATCH_UP },
    ]);
    pool.waiting = 0;
    watch.count = 3;
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.result).toEqual({ rate: 10 });
    expect(pool.listening()).toBe(0);
  });

  it('a queued booking whose slots a decrease stretched allows its writes until the stretched slots end', async () => {
    const pool = new DrivenPool();
    const table = new MemoryBudgetTable();
    // 10 writes/s: another holder has [0, 2000) ms; this one's 5 slots are [2000, 2500).
    const ahead = await budgetOn(table, 10).budget.book({
      writes: 20,
      latestStart: T0,
      writeBy: T0 + 60_000,
    });
    const { budget } = budgetOn(table, 10);
    const { finish, state } = holder(budget, pool, 5);
    // At 100 ms the holder ahead halves the rate: the 1.9 s to its first slot take 3.8 s, its slots 1 s.
    await vi.advanceTimersByTimeAsync(100);
    await ahead.step({ accepted: 10, throttled: 10, starved: false });
    await vi.advanceTimersByTimeAsync(3_800);
    expect(pool.allowances()).toEqual([
      { at: 3_900, ms: 200, catchUpMs: CATCH_UP, starts: 5, withinMs: 1_000 + CATCH_UP },
    ]);
    finish();
    await vi.advanceTimersByTimeAsync(0);
    expect(state.result).toEqual({ rate: 5 });
  });

  it('books a write that reaches the pool behind a read that started at once, never zero slots, and lets it start', async () => {
    const pool = new DrivenPool();
    // 100 writes/s: 2 slots [0, 20) ms, both writes sent in them.
    const { budget, books } = budgetOn(new MemoryBudgetTable(), 100);
    const { watch, finish, state } = holder(budget, pool, 2);
    await vi.advanceTimersByTimeAsync(5);
    watch.count = 2;
    await vi.advanceTimersByTimeAsync(95);
    // At 100 ms another record's read reaches the pool and starts at once (unpaced): nothing waits.
    pool.emit('pool:taskQueued', { id: 'read', waiting: 1 });
    await vi.advanceTimersByTimeAsync(50);
    // At 150 ms its write follows, and waits for a slot.
    pool.waiting = 1;
    pool.emit('pool:taskQueued', { id: 'write', waiting: 1 });
    await vi.advanceTimersByTimeAsync(5);
    expect(books.map((b) => b.writes)).toEqual([2, 1]);
    expect(books[1]?.at).toBe(150);
    // The write is allowed a start in its new slot, and takes it.
    expect(pool.allowances(150).at(-1)).toMatchObject({ starts: 1 });
    pool.waiting = 0;
    watch.count = 3;
    finish();
    await vi.runAllTimersAsync();
    expect(state.result).toEqual({ rate: 100 });
  });

  it('lets its pool go only once a step in flight has cut: a cut that lands after its work never lapses the allowance', async () => {
    const pool = new DrivenPool();
    // 100 writes/s: 40 slots [0, 400) ms. Its steps take 100 ms to answer.
    const inner = new MemoryRateBudget({
      ceiling: 100,
      name: NAME,
      table: new MemoryBudgetTable(),
      random: () => 0,
    });
    const budget: RateBudget = {
      name: inner.name,
      ceiling: inner.ceiling,
      book: async (options) => {
        const booking = await inner.book(options);
        return withBookingCalls(booking, {
          step: async (round, stepOptions) => {
            await new Promise((resolve) => setTimeout(resolve, 100));
            return booking.step(round, stepOptions);
          },
          report: (report, reportOptions) => booking.report(report, reportOptions),
        });
      },
    };
    const { watch, finish, state } = holder(budget, pool, 40);
    await vi.advanceTimersByTimeAsync(50);
    overloadedRound(pool, watch);
    // Its work ends while the step is on its way (answered at 150 ms, a decrease: a cut).
    await vi.advanceTimersByTimeAsync(10);
    finish();
    await vi.runAllTimersAsync();
    expect(state.result).toMatchObject({ rate: expect.any(Number) });
    // The pool outlives the holder (the tenant's next batch, perhaps unbooked): the last allowance it was
    // given is unbounded, with no end.
    expect(pool.allowances().at(-1)).toMatchObject({
      starts: Number.POSITIVE_INFINITY,
      withinMs: Number.POSITIVE_INFINITY,
    });
    expect(pool.told.filter((t) => t.withinMs !== undefined).at(-1)).toMatchObject({
      withinMs: Number.POSITIVE_INFINITY,
    });
  });
});
