import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RateWindow, runUnderRate } from '../../../../../lib/ingest/handler/run/rate-holder.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../../../lib/semaphore/memory-rate-budget.js';
import type { BookOptions, RateBudget } from '../../../../../lib/semaphore/rate-types.js';
import { SLOT_CATCH_UP_MS } from '../../../../../lib/semaphore/tuning.js';

// A holder whose slots are over while writes are left (retries of refused writes, more writes than fitted)
// holds them and books the next free slots at the end of the schedule, rather than writing in the slots of
// the holder booked after it.

const NAME = 'prefix:b/t=acme/';
const T0 = 1_000_000;

const slowDown = () => Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });

function budgetOn(
  table: MemoryBudgetTable,
  books: BookOptions[] = [],
  limits: { ceiling: number; startRate?: number } = { ceiling: 10 },
): RateBudget {
  const inner = new MemoryRateBudget({ ...limits, name: NAME, table, random: () => 0 });
  return {
    name: inner.name,
    ceiling: inner.ceiling,
    book: (options) => {
      books.push(options);
      return inner.book(options);
    },
  };
}

function window(deadline: number): RateWindow {
  return { deadline, signal: new AbortController().signal, releaseTimeoutMs: 500 };
}

/**
 * `count` writes through `pool` under the holder's signal, the first attempt of each refused by
 * `refuseFirst`; start times (ms since T0), and when each write that settled unwritten did, with its error.
 */
function writesThrough(pool: ExecutorPool, count: number, refuseFirst: (i: number) => boolean) {
  const starts: number[] = [];
  const unwritten: Array<{ at: number; error: string }> = [];
  const body = async (signal?: AbortSignal) => {
    const settled = await Promise.allSettled(
      Array.from({ length: count }, (_, i) => {
        let attempt = 0;
        return pool.enqueue(
          async () => {
            starts.push(Date.now() - T0);
            if (attempt++ === 0 && refuseFirst(i)) throw slowDown();
          },
          { signal },
        );
      }),
    );
    for (const s of settled)
      if (s.status === 'rejected') unwritten.push({ at: Date.now() - T0, error: (s.reason as Error).name });
  };
  return { starts, unwritten, body };
}

/** Holder B: 5 writes, none refused, booked after whoever booked first in `table`. */
function fiveWritesBehind(table: MemoryBudgetTable, deadline: number) {
  const poolB = new ExecutorPool({ concurrency: 5, retries: 0, timeout: 0 });
  const b = writesThrough(poolB, 5, () => false);
  const holderB = runUnderRate(
    budgetOn(table),
    { pool: poolB, writes: 5, inFlight: 5 },
    window(deadline),
    undefined,
    b.body,
  );
  return { b, holderB };
}

/**
 * The invocation's cutoff at 10 s, so a holder that stalls is stopped rather than hanging the test: aborts
 * `cutoff` and stops `pool`. Cleared by the caller once its work is done.
 */
function armCutoff(cutoff: AbortController, pool: ExecutorPool): ReturnType<typeof setTimeout> {
  return setTimeout(() => {
    cutoff.abort(new Error('cutoff'));
    pool.stop();
  }, 10_000);
}

/**
 * Holder A at 10 writes/s with `writes` writes, whose refused writes are retried once, and a cutoff at
 * 10 s (`armCutoff`) that `body` arms and clears around its writes through `pool`.
 */
function holderWithCutoff(writes: number) {
  const table = new MemoryBudgetTable();
  const books: BookOptions[] = [];
  const cutoff = new AbortController();
  const pool = new ExecutorPool({
    concurrency: writes,
    retries: 1,
    retryDelay: 1,
    jitter: 'none',
    timeout: 0,
  });
  const run = (body: () => Promise<unknown>) =>
    runUnderRate(
      budgetOn(table, books),
      { pool, writes, inFlight: writes },
      { deadline: T0 + 10_000, signal: cutoff.signal, releaseTimeoutMs: 500 },
      undefined,
      async () => {
        const timer = armCutoff(cutoff, pool);
        await body();
        clearTimeout(timer);
      },
    );
  return { cutoff, pool, run, books };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('runUnderRate: writes left when its slots are over', () => {
  it("books the next free slots after the holder booked behind it, starts none in that holder's slots, and leaves its pool unheld", async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    // 10 writes/s: A books 5 slots [0, 500) ms; B, booked right after, has [500, 1000).
    const poolA = new ExecutorPool({ concurrency: 5, retries: 1, retryDelay: 1, jitter: 'none', timeout: 0 });
    // One refusal: noise to the law (a round that cuts is the next test's), so the rate stays at 10.
    const a = writesThrough(poolA, 5, (i) => i < 1);
    const holderA = runUnderRate(
      budgetOn(table, booksA),
      { pool: poolA, writes: 5, inFlight: 5 },
      window(T0 + 10_000),
      undefined,
      a.body,
    );
    await vi.advanceTimersByTimeAsync(0);
    const { b, holderB } = fiveWritesBehind(table, T0 + 10_000);
    await vi.runAllTimersAsync();
    const [resultA, resultB] = await Promise.all([holderA, holderB]);
    expect(resultA).toMatchObject({ rate: 10 });
    expect(resultB).toMatchObject({ rate: 10 });
    expect(b.starts).toEqual([500, 600, 700, 800, 900]);
    // A's refused write was retried after its slots: in a slot booked after B's.
    expect(booksA.map((o) => o.writes)).toEqual([5, 1]);
    expect(a.starts).toHaveLength(6);
    const late = a.starts.filter((t) => t >= 500);
    expect(late).toEqual([1000]);
    // The pool outlives the holder: its next writes are not held by the spent allowance.
    const next = poolA.enqueue(async () => Date.now() - T0);
    await vi.runAllTimersAsync();
    await expect(next).resolves.toBeGreaterThanOrEqual(1100);
  });

  it("reports its booking's round before it books again: an overloaded round cuts the schedule, and the writes left pace at the cut rate", async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    const poolA = new ExecutorPool({ concurrency: 5, retries: 1, retryDelay: 1, jitter: 'none', timeout: 0 });
    // Two of five refused: more than noise, and a share (0.4) the law cuts by: 10 -> 6 writes/s.
    const a = writesThrough(poolA, 5, (i) => i < 2);
    const holderA = runUnderRate(
      budgetOn(table, booksA),
      { pool: poolA, writes: 5, inFlight: 5 },
      window(T0 + 10_000),
      undefined,
      a.body,
    );
    await vi.runAllTimersAsync();
    expect(await holderA).toMatchObject({ rate: 6 });
    expect(booksA.map((o) => o.writes)).toEqual([5, 2]);
    // Cut when its slots ended (500 ms, and the catch-up a late start keeps its slot for).
    expect(table.item(NAME)).toMatchObject({ rate: 6, decreasedAt: T0 + 500 + SLOT_CATCH_UP_MS });
    // The retries start in slots a sixth of a second apart.
    const late = a.starts.filter((t) => t >= 500);
    expect(late).toHaveLength(2);
    expect(late[1]! - late[0]!).toBeGreaterThanOrEqual(166);
  });

  it('books again within the wait its tenant has for a first slot: further ahead, it gives up the writes left as out of turn (for deferral) rather than holding its invocation', async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    // A new schedule climbing from 10 writes/s: A's first booking spans a round, 10 slots [0, 1000) ms, of
    // its 20 writes; B then books [1000, 1500) and C [1500, 2000). A's next free slot is a second ahead:
    // past its 500 ms wait.
    const poolA = new ExecutorPool({ concurrency: 20, retries: 0, timeout: 0 });
    const a = writesThrough(poolA, 20, () => false);
    let givenUpFor: unknown;
    const holderA = runUnderRate(
      budgetOn(table, booksA, { ceiling: 100, startRate: 10 }),
      { pool: poolA, writes: 20, inFlight: 20, maxWaitMs: 500 },
      window(T0 + 10_000),
      undefined,
      async (signal) => {
        await a.body(signal);
        givenUpFor = signal.reason;
      },
    );
    await vi.advanceTimersByTimeAsync(0);
    const behind = [fiveWritesBehind(table, T0 + 10_000), fiveWritesBehind(table, T0 + 10_000)];
    await vi.runAllTimersAsync();
    expect(await holderA).toMatchObject({ rate: 10 });
    await Promise.all(behind.map((h) => h.holderB));
    expect(booksA.map((o) => o.writes)).toEqual([20, 10]);
    expect(booksA[1]!.latestStart).toBeLessThanOrEqual(T0 + 1_000 + SLOT_CATCH_UP_MS + 500);
    expect(a.starts).toHaveLength(10);
    expect(a.unwritten).toHaveLength(10);
    expect(a.unwritten.every((u) => u.at < 1_500)).toBe(true);
    expect(givenUpFor).toBeInstanceOf(SemaphoreTimeoutError);
  });

  it('gives up a retry at once when no slot is left before the cutoff, rather than holding it until then', async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    const deadline = T0 + 1_500;
    const cutoff = new AbortController();
    const until = { deadline, signal: cutoff.signal, releaseTimeoutMs: 500 };
    // 10 writes/s: A's 10 slots are [0, 1000) ms, B's 5 are [1000, 1500): nothing is free before the cutoff.
    const poolA = new ExecutorPool({
      concurrency: 10,
      retries: 1,
      retryDelay: 1,
      jitter: 'none',
      timeout: 0,
    });
    const a = writesThrough(poolA, 10, (i) => i === 9);
    const holderA = runUnderRate(
      budgetOn(table, booksA),
      { pool: poolA, writes: 10, inFlight: 10 },
      until,
      undefined,
      async (signal) => {
        const work = a.body(signal);
        // The invocation's cutoff: what has not started is abandoned (the handler's deadline signal).
        setTimeout(() => {
          cutoff.abort(new Error('cutoff'));
          poolA.stop();
        }, 1_500);
        await work;
      },
    );
    await vi.advanceTimersByTimeAsync(0);
    // A later cutoff: half of it is time enough to wait for A's slots to pass.
    const { b, holderB } = fiveWritesBehind(table, T0 + 3_000);
    await vi.runAllTimersAsync();
    await Promise.all([holderA, holderB]);
    expect(b.starts).toEqual([1000, 1100, 1200, 1300, 1400]);
    // A asked for one more slot for its retry, found none before the cutoff, and never started it: it
    // settled aborted when the slots were over, not at the cutoff (1,500 ms).
    expect(booksA.map((o) => o.writes)).toEqual([10, 1]);
    expect(a.starts).toHaveLength(10);
    expect(a.starts.every((t) => t < 1_000)).toBe(true);
    expect(a.unwritten).toHaveLength(1);
    expect(a.unwritten[0]!.error).toBe('TaskAbortedError');
    expect(a.unwritten[0]!.at).toBeLessThan(1_100);
  });

  it('books slots for writes that reach the pool after its slots are over (each behind a read that took longer), and starts them there', async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    const cutoff = new AbortController();
    // 10 writes/s: 3 slots are [0, 300) ms, but each write follows a read of 700 ms (an upsert's GET), so
    // the writes reach the pool when the slots have passed and nothing of the pool is waiting.
    const poolA = new ExecutorPool({ concurrency: 3, retries: 0, timeout: 0 });
    const starts: number[] = [];
    const holderA = runUnderRate(
      budgetOn(table, booksA),
      { pool: poolA, writes: 3, inFlight: 3 },
      { deadline: T0 + 10_000, signal: cutoff.signal, releaseTimeoutMs: 500 },
      undefined,
      async () => {
        const timer = armCutoff(cutoff, poolA);
        await Promise.allSettled(
          Array.from({ length: 3 }, async () => {
            await poolA.enqueue(() => new Promise((resolve) => setTimeout(resolve, 700)), { paced: false });
            await poolA.enqueue(async () => {
              starts.push(Date.now() - T0);
            });
          }),
        );
        clearTimeout(timer);
      },
    );
    await vi.runAllTimersAsync();
    await expect(holderA).resolves.toMatchObject({ rate: 10 });
    expect(cutoff.signal.aborted).toBe(false);
    // The first booking's slots passed unused; the writes booked the next free slots when they came.
    expect(booksA[0]?.writes).toBe(3);
    expect(booksA.slice(1).reduce((sum, o) => sum + o.writes, 0)).toBeGreaterThanOrEqual(3);
    expect(starts).toHaveLength(3);
    expect(Math.min(...starts)).toBeGreaterThanOrEqual(700);
    // Never two writes in one slot: 100 ms apart at 10 writes/s.
    const sorted = [...starts].sort((x, y) => x - y);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThanOrEqual(100);
  });

  it('a read that reaches the pool after its slots, with every write it booked sent, books the write behind it (never zero slots)', async () => {
    // 10 writes/s, 2 writes: slots [0, 200) ms. The first write is refused once and its retry takes the
    // second slot, so both booked writes are sent. The second record's read (unpaced: it starts at once)
    // reaches the pool at 700 ms, and its write follows it.
    const { cutoff, pool: poolA, run, books: booksA } = holderWithCutoff(2);
    const starts: number[] = [];
    let attempt = 0;
    const holderA = run(() => {
      const first = poolA.enqueue(async () => {
        starts.push(Date.now() - T0);
        if (attempt++ === 0) throw slowDown();
      });
      const second = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 700));
        await poolA.enqueue(() => new Promise((resolve) => setTimeout(resolve, 10)), { paced: false });
        await poolA.enqueue(async () => {
          starts.push(Date.now() - T0);
        });
      })();
      return Promise.allSettled([first, second]);
    });
    await vi.runAllTimersAsync();
    await expect(holderA).resolves.toMatchObject({ rate: 10 });
    expect(cutoff.signal.aborted).toBe(false);
    expect(booksA.every((o) => o.writes >= 1)).toBe(true);
    expect(starts).toHaveLength(3);
    expect(starts[2]).toBeGreaterThanOrEqual(710);
    expect(starts[2]).toBeLessThan(2_000);
  });

  it('a write still in flight when its slots end, refused and retried, books a slot for its retry and starts it before the cutoff', async () => {
    // 10 writes/s, 2 writes: slots [0, 200) ms. The first write is answered at 500 ms, after the slots are
    // over and nothing is waiting; its answer is a SlowDown, so its retry waits out its backoff and goes
    // back to the queue (no new task: the pool emits a retry, not a `pool:taskQueued`).
    const { cutoff, pool: poolA, run, books: booksA } = holderWithCutoff(2);
    const starts: number[] = [];
    let attempt = 0;
    const holderA = run(() => {
      const slow = poolA.enqueue(async () => {
        starts.push(Date.now() - T0);
        if (attempt++ > 0) return;
        await new Promise((resolve) => setTimeout(resolve, 500));
        throw slowDown();
      });
      const quick = poolA.enqueue(async () => {
        starts.push(Date.now() - T0);
      });
      return Promise.allSettled([slow, quick]);
    });
    await vi.runAllTimersAsync();
    await expect(holderA).resolves.toMatchObject({ rate: 10 });
    expect(cutoff.signal.aborted).toBe(false);
    expect(booksA.map((o) => o.writes)).toEqual([2, 1]);
    expect(starts).toHaveLength(3);
    expect(starts[2]).toBeGreaterThanOrEqual(501);
    expect(starts[2]).toBeLessThan(1_000);
  });

  it('a rebooking that fails gives up the writes left at once (they settle aborted, for redelivery) instead of holding them until the cutoff', async () => {
    const table = new MemoryBudgetTable();
    const throttled = Object.assign(
      new Error('The level of configured provisioned throughput was exceeded'),
      {
        name: 'ProvisionedThroughputExceededException',
      },
    );
    const inner = budgetOn(table);
    let books = 0;
    // The first booking works; the rebooking for the refused write's retry finds the store throttled.
    const budget: RateBudget = {
      ...inner,
      book: (options) => (++books === 1 ? inner.book(options) : Promise.reject(throttled)),
    };
    const cutoff = new AbortController();
    const pool = new ExecutorPool({ concurrency: 2, retries: 1, retryDelay: 1, jitter: 'none', timeout: 0 });
    const outcomes: string[] = [];
    const holder = runUnderRate(
      budget,
      { pool, writes: 2, inFlight: 2 },
      { deadline: T0 + 10_000, signal: cutoff.signal, releaseTimeoutMs: 500 },
      undefined,
      async (signal) => {
        const timer = armCutoff(cutoff, pool);
        let attempt = 0;
        // 10 writes/s, slots [0, 200) ms; the first write is refused once and its retry waits for a slot.
        const writes = [
          pool.enqueue(
            async () => {
              if (attempt++ === 0) throw slowDown();
            },
            { signal },
          ),
          pool.enqueue(async () => {}, { signal }),
        ];
        const settled = await Promise.allSettled(writes);
        for (const s of settled)
          outcomes.push(s.status === 'fulfilled' ? 'written' : (s.reason as Error).name);
        clearTimeout(timer);
      },
    );
    await vi.runAllTimersAsync();
    await expect(holder).resolves.toMatchObject({ rate: 10 });
    expect(cutoff.signal.aborted).toBe(false);
    expect(books).toBe(2);
    expect(outcomes).toEqual(['TaskAbortedError', 'written']);
  });

  it("after a cut stretches its slots, its writes left over book after the holder behind it, never in that holder's stretched slots", async () => {
    const table = new MemoryBudgetTable();
    const booksA: BookOptions[] = [];
    const budget = (books?: BookOptions[]) => {
      const inner = new MemoryRateBudget({ ceiling: 100, name: NAME, table, random: () => 0 });
      return {
        name: inner.name,
        ceiling: inner.ceiling,
        book: (options: BookOptions) => {
          books?.push(options);
          return inner.book(options);
        },
      };
    };
    // 100 writes/s: A books 40 slots [0, 400) ms. Its writes 10 to 20 are refused every other one (6 of
    // 11: the round halves the rate at about 210 ms) and retried once, so 6 more writes than slots.
    const poolA = new ExecutorPool({ concurrency: 1, retries: 1, retryDelay: 1, jitter: 'none', timeout: 0 });
    const a = writesThrough(poolA, 40, (i) => i >= 10 && i <= 20 && i % 2 === 0);
    const holderA = runUnderRate(
      budget(booksA),
      { pool: poolA, writes: 40, inFlight: 1 },
      window(T0 + 10_000),
      undefined,
      a.body,
    );
    await vi.advanceTimersByTimeAsync(0);
    // B books 10 slots behind A's, [400, 500); the halving stretches them with the schedule.
    const poolB = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const b = writesThrough(poolB, 10, () => false);
    const holderB = runUnderRate(
      budget(),
      { pool: poolB, writes: 10, inFlight: 1 },
      window(T0 + 10_000),
      undefined,
      b.body,
    );
    await vi.runAllTimersAsync();
    await Promise.all([holderA, holderB]);

    expect(table.item(NAME)?.rate).toBe(50);
    expect(b.starts).toHaveLength(10);
    const [bFrom, bTo] = [Math.min(...b.starts), Math.max(...b.starts)];
    // B's slots are at 50 writes/s after the halving: 20 ms apart, starting where A's stretched ones end.
    expect(bTo - bFrom).toBe(9 * 20);
    expect(a.starts).toHaveLength(46);
    // A started nothing in B's slots: its writes left over booked the next free slots, after B's.
    expect(a.starts.filter((t) => t > bFrom - 20 && t < bTo + 20)).toEqual([]);
    expect(booksA).toHaveLength(2);
    expect(Math.max(...a.starts)).toBeGreaterThan(bTo);
  });

  it("a report that fails is in the holder's result, whichever booking made it: a round's before a rebooking too", async () => {
    const table = new MemoryBudgetTable();
    const lost = (n: number) => new Error(`report ${n} lost`);
    let reports = 0;
    const inner = budgetOn(table);
    const failingReports: RateBudget = {
      name: inner.name,
      ceiling: inner.ceiling,
      book: async (options) => {
        const booking = await inner.book(options);
        return Object.assign(Object.create(booking) as typeof booking, {
          report: async () => {
            reports += 1;
            throw lost(reports);
          },
        });
      },
    };
    const pool = new ExecutorPool({ concurrency: 5, retries: 1, retryDelay: 1, jitter: 'none', timeout: 0 });
    // One refusal: its retry comes after the booking's 5 slots, so the holder reports and books again.
    const a = writesThrough(pool, 5, (i) => i < 1);
    const holder = runUnderRate(
      failingReports,
      { pool, writes: 5, inFlight: 5 },
      window(T0 + 10_000),
      undefined,
      a.body,
    );
    await vi.runAllTimersAsync();
    const result = await holder;
    expect(a.starts).toHaveLength(6);
    expect(reports).toBe(2);
    expect(result).toEqual({ rate: 10, reportErrors: [lost(1), lost(2)] });
  });
});
