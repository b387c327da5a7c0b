import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type RateWindow, runUnderRate } from '../../../../../lib/ingest/handler/run/rate-holder.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { withBookingCalls } from '../../../../../lib/semaphore/booking-calls.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { MemoryBudgetTable, MemoryRateBudget } from '../../../../../lib/semaphore/memory-rate-budget.js';
import { nextRate } from '../../../../../lib/semaphore/rate-law.js';
import type {
  BookOptions,
  RateBooking,
  RateBudget,
  ScheduleView,
  WriteRound,
} from '../../../../../lib/semaphore/rate-types.js';
import { MIN_ROUND_WRITES, ROUND_MS } from '../../../../../lib/semaphore/tuning.js';

const NAME = 'prefix:b/t=acme/';
/** Epoch ms the tests start at (fake timers: Date.now, performance.now and every timer). */
const T0 = 1_000_000;

const slowDown = () => Object.assign(new Error('Please reduce your request rate.'), { name: 'SlowDown' });

/** A budget of `ceiling` writes/s in `table` (shared by the holders of one prefix), on the fake clock. */
function memoryBudget(
  ceiling: number,
  table = new MemoryBudgetTable(),
  startRate?: number,
): MemoryRateBudget {
  return new MemoryRateBudget({ ceiling, name: NAME, table, random: () => 0, startRate });
}

interface Faults {
  /** Every step with writes in its round rejects with this. */
  stepError?: unknown;
  /** Every step with writes in its round resolves this view instead of stepping. */
  stepView?: ScheduleView;
  /** Every step, empty rounds too (reading the schedule at the first slot), rejects with this. */
  readError?: unknown;
  /** The report rejects with this. */
  reportError?: unknown;
  /** Every step with writes in its round takes this long (fake ms) before it steps. */
  stepDelayMs?: number;
  /** Every step with writes in its round answers only when its signal aborts (a store that stalls). */
  stepStalls?: true;
}

/** `inner` as a holder sees it, keeping what it was asked (with the fake time of each call) and failing as told. */
function recording(inner: RateBudget, faults: Faults = {}) {
  const books: BookOptions[] = [];
  const steps: Array<{ round: WriteRound; at: number }> = [];
  const reports: WriteRound[] = [];
  const wrap = (booking: RateBooking): RateBooking =>
    withBookingCalls(booking, {
      step: async (round, options) => {
        steps.push({ round, at: Date.now() });
        const empty = round.accepted + round.throttled === 0;
        if (faults.readError !== undefined) throw faults.readError;
        if (!empty && faults.stepError !== undefined) throw faults.stepError;
        if (!empty && faults.stepView !== undefined) return faults.stepView;
        if (!empty && faults.stepStalls)
          return new Promise((_resolve, reject) => {
            const signal = options?.signal;
            signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
          });
        if (!empty && faults.stepDelayMs !== undefined)
          await new Promise((resolve) => setTimeout(resolve, faults.stepDelayMs));
        return booking.step(round, options);
      },
      report: async (report, options) => {
        reports.push(report);
        if (faults.reportError !== undefined) throw faults.reportError;
        return booking.report(report, options);
      },
    });
  const budget: RateBudget = {
    name: inner.name,
    ceiling: inner.ceiling,
    book: async (options) => {
      books.push(options);
      return wrap(await inner.book(options));
    },
  };
  /** The steps with writes in their round (the overloaded rounds the pace stepped). */
  const overloadSteps = () => steps.filter((s) => s.round.accepted + s.round.throttled > 0);
  return { budget, books, steps, reports, overloadSteps };
}

/** A budget whose every booking fails with `error` (the store unreachable, or the schedule booked ahead). */
function failingBudget(error: unknown): RateBudget {
  return {
    name: NAME,
    ceiling: 100,
    book: async () => {
      throw error;
    },
  };
}

function window(deadline: number, signal = new AbortController().signal): RateWindow {
  return { deadline, signal, releaseTimeoutMs: 500 };
}

function pool(): ExecutorPool {
  return new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
}

/** A write count the holder reads, and whether it stopped reading it. */
function watch(count = 0) {
  return {
    count,
    stopped: false,
    stop() {
      this.stopped = true;
    },
  };
}

/** Runs `promise` to its end on the fake clock. */
async function settle<T>(promise: Promise<T>): Promise<T> {
  await vi.runAllTimersAsync();
  return promise;
}

/**
 * Whether the write `i` (from 0) of a holder's 40 is refused: every other one from the 11th on, for
 * MIN_ROUND_WRITES + 1 writes (the round that steps: MIN_ROUND_WRITES / 2 + 1 of them refused).
 */
const halfRefused = (i: number) => i >= 10 && i <= 10 + MIN_ROUND_WRITES && i % 2 === 0;
/** The round `halfRefused` steps with, once its last refusal is in. */
const halfRound = { accepted: MIN_ROUND_WRITES / 2, throttled: MIN_ROUND_WRITES / 2 + 1, starved: false };

/**
 * A holder's body that sends 40 writes one by one through its pool, refusing those `refused` picks, and
 * records when each started (ms since T0).
 */
function fortyWrites(p: ExecutorPool, refused: (i: number) => boolean) {
  const starts: number[] = [];
  const body = async () => {
    const writes = Array.from({ length: 40 }, (_, i) =>
      p.enqueue(async () => {
        starts.push(Date.now() - T0);
        if (refused(i)) throw slowDown();
      }),
    );
    await Promise.allSettled(writes);
  };
  return { starts, body };
}

/** A holder of `count` writes in `budget` with 20 s left, its pool recording when each write started (ms since T0). */
function timedHolder(budget: RateBudget, count: number) {
  const p = pool();
  const starts: number[] = [];
  const running = runUnderRate(
    budget,
    { pool: p, writes: count, inFlight: 1 },
    window(T0 + 20_000),
    undefined,
    () =>
      Promise.all(
        Array.from({ length: count }, () => p.enqueue(async () => starts.push(Date.now() - T0))),
      ).then(() => {}),
  );
  return { starts, running };
}

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

describe('runUnderRate: booking', () => {
  it('books a slot per write, from now to the cutoff, starting no later than half the time left, a round of the law at most', async () => {
    const { budget, books } = recording(memoryBudget(100));
    const signal = new AbortController().signal;
    await settle(
      runUnderRate(
        budget,
        { pool: pool(), writes: 40, inFlight: 8 },
        window(T0 + 10_000, signal),
        undefined,
        async () => {},
      ),
    );
    expect(books).toEqual([
      { writes: 40, latestStart: T0 + 5_000, writeBy: T0 + 10_000, spanMs: ROUND_MS, signal },
    ]);
  });

  it('waits no longer than maxWaitMs for its first slot, and never more than half the time left', async () => {
    const { budget, books } = recording(memoryBudget(100));
    const waits: number[] = [];
    for (const maxWaitMs of [300, 60_000]) {
      // A fresh clock for each holder: 10 s left, so half of it is 5 s.
      vi.setSystemTime(T0);
      await settle(
        runUnderRate(
          budget,
          { pool: pool(), writes: 1, inFlight: 1, maxWaitMs },
          window(T0 + 10_000),
          undefined,
          async () => {},
        ),
      );
      waits.push(books.at(-1)!.latestStart - T0);
    }
    expect(waits).toEqual([300, 5_000]);
  });

  it('books whole writes, at least one', async () => {
    const { budget, books } = recording(memoryBudget(100));
    for (const writes of [2.3, 0]) {
      await settle(
        runUnderRate(
          budget,
          { pool: pool(), writes, inFlight: 1 },
          window(T0 + 10_000),
          undefined,
          async () => {},
        ),
      );
    }
    expect(books.map((b) => b.writes)).toEqual([3, 1]);
  });

  it("paces the pool at the booking's rate and bounds its requests in flight, at least one", async () => {
    const seen: Array<{ interval: number; concurrency: number }> = [];
    for (const inFlight of [8, 0]) {
      const p = pool();
      const result = await settle(
        runUnderRate(
          memoryBudget(20),
          { pool: p, writes: 40, inFlight },
          window(T0 + 10_000),
          undefined,
          async () => {
            seen.push({ interval: p.startInterval, concurrency: p.concurrency });
          },
        ),
      );
      expect(result).toEqual({ rate: 20 });
    }
    expect(seen).toEqual([
      { interval: 50, concurrency: 8 },
      { interval: 50, concurrency: 1 },
    ]);
  });
});

describe('runUnderRate: no slots', () => {
  it('is out of turn when the schedule is booked past its latest start, and runs nothing', async () => {
    const table = new MemoryBudgetTable();
    // Another holder's 200 writes at 20/s fill the schedule until T0 + 10 s.
    await memoryBudget(20, table).book({ writes: 200, latestStart: T0, writeBy: T0 + 60_000 });
    const p = pool();
    const writes = watch();
    let ran = false;
    const result = await settle(
      runUnderRate(
        memoryBudget(20, table),
        { pool: p, writes: 40, inFlight: 4 },
        window(T0 + 10_000),
        writes,
        async () => {
          ran = true;
        },
      ),
    );
    expect(result).toEqual({ unavailable: expect.any(SemaphoreTimeoutError), outOfTurn: true });
    // Its records are deferred until the first free slot.
    expect(result).toMatchObject({ unavailable: { name: 'SemaphoreTimeoutError', freeAt: T0 + 10_000 } });
    expect(ran).toBe(false);
    expect(p.startInterval).toBe(0);
    expect(writes.stopped).toBe(true);
  });

  it('is unavailable, not out of turn, when the store fails', async () => {
    const failure = Object.assign(new Error('connect ECONNREFUSED'), { name: 'Error' });
    const writes = watch();
    let ran = false;
    const result = await settle(
      runUnderRate(
        failingBudget(failure),
        { pool: pool(), writes: 40, inFlight: 4 },
        window(T0 + 10_000),
        writes,
        async () => {
          ran = true;
        },
      ),
    );
    expect(result).toEqual({ unavailable: failure });
    expect(ran).toBe(false);
    expect(writes.stopped).toBe(true);
  });

  it('a booking cut short by the cutoff is unavailable with a timeout at its latest start, not out of turn', async () => {
    const cutoff = new AbortController();
    cutoff.abort(new Error('cutoff'));
    const result = await settle(
      runUnderRate(
        failingBudget(cutoff.signal.reason),
        { pool: pool(), writes: 40, inFlight: 4 },
        window(T0 + 10_000, cutoff.signal),
        undefined,
        async () => {},
      ),
    );
    expect(result).toEqual({ unavailable: expect.any(SemaphoreTimeoutError) });
    expect(result).toMatchObject({ unavailable: { semaphore: NAME, min: 40, deadline: T0 + 5_000 } });
  });
});

describe('runUnderRate: the first slot', () => {
  /** A table whose schedule another holder booked `writes` slots of (at `ceiling`/s from T0), and its booking. */
  async function bookedAhead(ceiling: number, writes: number) {
    const table = new MemoryBudgetTable();
    const ahead = await memoryBudget(ceiling, table).book({ writes, latestStart: T0, writeBy: T0 + 60_000 });
    return { table, ahead };
  }

  /** A holder of 10 writes with 20 s left, whose work notes when it began and the pace it was given. */
  function holder(budget: RateBudget, signal?: AbortSignal, writes?: ReturnType<typeof watch>) {
    const p = pool();
    const seen: { began?: number; interval?: number } = {};
    const running = runUnderRate(
      budget,
      { pool: p, writes: 10, inFlight: 1 },
      window(T0 + 20_000, signal),
      writes,
      async () => {
        seen.began = Date.now();
        seen.interval = p.startInterval;
      },
    );
    return { running, seen };
  }

  /** The holder ahead halves the rate: an overloaded round of its own. */
  const halve = (ahead: RateBooking) => ahead.step({ accepted: 10, throttled: 10, starved: false });

  it('a booking not queued starts at once and reads nothing more', async () => {
    const { budget, steps } = recording(memoryBudget(10));
    const { running, seen } = holder(budget);
    expect(await settle(running)).toEqual({ rate: 10 });
    expect(seen).toEqual({ began: T0, interval: 100 });
    expect(steps).toEqual([]);
  });

  it('a queued booking sleeps until its first slot, then reads the schedule once', async () => {
    const { table } = await bookedAhead(10, 20);
    const { budget, steps } = recording(memoryBudget(10, table));
    const { running, seen } = holder(budget);
    expect(await settle(running)).toEqual({ rate: 10 });
    expect(seen.began).toBe(T0 + 2_000);
    expect(steps).toEqual([{ round: { accepted: 0, throttled: 0, starved: false }, at: T0 + 2_000 }]);
  });

  it('follows a decrease made after its booking: its slots stretch, so it starts later and paces at the new rate', async () => {
    const { table, ahead } = await bookedAhead(10, 20);
    const { running, seen } = holder(memoryBudget(10, table));
    // Booked at T0 for the slots from T0 + 2 s; at T0 + 100 ms the holder ahead halves the rate.
    await vi.advanceTimersByTimeAsync(100);
    expect(await halve(ahead)).toEqual({ rate: 5, decreasedAt: T0 + 100 });
    expect(await settle(running)).toEqual({ rate: 5 });
    // Its first slot, 1.9 s after the decrease at 10/s, is 3.8 s after it at 5/s.
    expect(seen).toEqual({ began: T0 + 3_900, interval: 200 });
  });

  it('writes all its writes in its stretched slots after a decrease, and the holder booked behind it starts where they end', async () => {
    const { table, ahead } = await bookedAhead(10, 20);
    const books: BookOptions[] = [];
    const recorded = recording(memoryBudget(10, table));
    const budget: RateBudget = {
      ...recorded.budget,
      book: (options) => {
        books.push(options);
        return recorded.budget.book(options);
      },
    };
    const { starts, running } = timedHolder(budget, 5);
    await vi.advanceTimersByTimeAsync(0);
    // Behind it: 5 more slots, [2.5 s, 3 s) at 10/s when booked.
    const behind = await memoryBudget(10, table).book({
      writes: 5,
      latestStart: T0 + 60_000,
      writeBy: T0 + 60_000,
    });
    await vi.advanceTimersByTimeAsync(100);
    await halve(ahead);
    expect(await settle(running)).toEqual({ rate: 5 });
    // Its slots [2 s, 2.5 s) at 10/s stretch around the decrease at 100 ms: [3.9 s, 4.9 s) at 5/s.
    expect(starts).toEqual([3_900, 4_100, 4_300, 4_500, 4_700]);
    expect(books).toHaveLength(1);
    // The schedule stretched the same way: the holder behind starts where its slots end.
    expect(table.item(NAME)!.freeAt).toBe(T0 + 5_900);
    expect(behind.startAt).toBe(T0 + 2_500);
  });

  it('a decrease made before its booking is already in its slots: nothing more to follow', async () => {
    const { table, ahead } = await bookedAhead(10, 20);
    await vi.advanceTimersByTimeAsync(100);
    await halve(ahead);
    const { running, seen } = holder(memoryBudget(10, table));
    expect(await settle(running)).toEqual({ rate: 5 });
    // The schedule, rescaled by the decrease, is free from T0 + 100 + 1.9 s x 2.
    expect(seen).toEqual({ began: T0 + 3_900, interval: 200 });
  });

  // A decrease stamped no later than the booking (the same ms, or a decreaser's clock a little behind the
  // booker's) still stretched its slots: a lower rate than the booking's can only come from a decrease after
  // it, so the rate alone decides, not the stamps.
  it('follows a decrease stamped in the same ms as its booking: its slots were stretched all the same', async () => {
    const { table, ahead } = await bookedAhead(10, 20);
    const { running, seen } = holder(memoryBudget(10, table));
    // Booked at T0; the holder ahead halves the rate in the same ms, after the booking.
    await vi.advanceTimersByTimeAsync(0);
    expect(table.item(NAME)!.freeAt).toBe(T0 + 3_000);
    expect(await halve(ahead)).toEqual({ rate: 5, decreasedAt: T0 });
    expect(table.item(NAME)!.freeAt).toBe(T0 + 6_000);
    expect(await settle(running)).toEqual({ rate: 5 });
    // Its slots now run from T0 + 4 s to T0 + 6 s at 5/s; starting at T0 + 2 s at 10/s it would write
    // alongside the holder ahead (still at 5/s until T0 + 4 s): 15 writes/s on a schedule of 5.
    expect(seen).toEqual({ began: T0 + 4_000, interval: 200 });
  });

  it('a read of the schedule that fails keeps the booking as made', async () => {
    const { table, ahead } = await bookedAhead(10, 20);
    const { budget } = recording(memoryBudget(10, table), { readError: new Error('read timed out') });
    const { running, seen } = holder(budget);
    await vi.advanceTimersByTimeAsync(100);
    await halve(ahead);
    expect(await settle(running)).toEqual({ rate: 10 });
    expect(seen).toEqual({ began: T0 + 2_000, interval: 100 });
  });

  it('follows an increase made after its booking: its window of slots holds more writes at the new rate, and its report steps from it', async () => {
    const { table } = await bookedAhead(10, 20);
    // Its budget's ceiling is 40: the stored rate (10) may rise after its booking.
    const { budget, reports } = recording(memoryBudget(40, table));
    const { starts, running } = timedHolder(budget, 10);
    // Booked at T0 for 10 slots at 10/s from T0 + 2 s: the window [2 s, 3 s).
    await vi.advanceTimersByTimeAsync(0);
    expect(table.item(NAME)!.freeAt).toBe(T0 + 3_000);
    await vi.advanceTimersByTimeAsync(100);
    const other = await memoryBudget(40, table).book({
      writes: 1,
      latestStart: T0 + 60_000,
      writeBy: T0 + 60_000,
    });
    // An increase adds by the time its booking ran at the rate (still before the holder's first slot).
    await vi.advanceTimersByTimeAsync(1_000);
    await other.report({ accepted: 1, throttled: 0, starved: true });
    const raised = table.item(NAME)!.rate;
    expect(raised).toBeGreaterThan(10);
    expect(await settle(running)).toEqual({ rate: raised });
    // Its writes start at the raised rate from its first slot, inside its window.
    expect(starts[0]).toBe(2_000);
    expect(starts.at(-1)!).toBeLessThan(3_000);
    expect(starts[1]! - starts[0]!).toBeLessThan(100);
    // Its round ran at the raised rate: the report steps the schedule from it, not dropped as stale.
    expect(reports).toEqual([{ accepted: 10, throttled: 0, starved: true }]);
    expect(table.item(NAME)!.rate).toBeGreaterThan(raised);
  });

  it('a booking made again, queued behind another, follows a decrease made before its turn: its slots stretch', async () => {
    // Climbing from 5 writes/s (ceiling 10): a booking spans a round (1 s), so 10 writes take two bookings.
    const table = new MemoryBudgetTable();
    const { starts, running } = timedHolder(memoryBudget(10, table, 5), 10);
    // Its first booking: 5 slots at 5/s, [0, 1 s). Another holder books the next second's 5 behind it.
    await vi.advanceTimersByTimeAsync(0);
    await memoryBudget(10, table, 5).book({ writes: 5, latestStart: T0 + 60_000, writeBy: T0 + 60_000 });
    // At 1 s its slots are over: its starved round doubles the rate (10/s) and it books its 5 writes left
    // behind the other's, [2 s, 2.5 s).
    await vi.advanceTimersByTimeAsync(1_050);
    expect(table.item(NAME)).toMatchObject({ rate: 10, freeAt: T0 + 2_500 });
    // A third holder books [2.5 s, 3 s) at 10/s and halves the rate at 1.2 s.
    const third = await memoryBudget(10, table, 5).book({
      writes: 5,
      latestStart: T0 + 60_000,
      writeBy: T0 + 60_000,
    });
    await vi.advanceTimersByTimeAsync(150);
    expect(await third.step({ accepted: 10, throttled: 10, starved: false })).toEqual({
      rate: 5,
      decreasedAt: T0 + 1_200,
    });
    await settle(running);
    // Its slots [2 s, 2.5 s) at 10/s stretch around the decrease at 1.2 s: [2.8 s, 3.8 s) at 5/s, as the
    // schedule's did; at 10/s from 2 s it would write beside the holder ahead, still at 5/s until 2.8 s.
    expect(starts.slice(5)).toEqual([2_800, 3_000, 3_200, 3_400, 3_600]);
  });

  it('the cutoff while it reads the schedule at its first slot ends the read and it: unavailable, nothing run', async () => {
    const { table } = await bookedAhead(10, 20);
    const inner = memoryBudget(10, table);
    const reads: number[] = [];
    // A read that answers only when its signal aborts (a store that stalls).
    const budget: RateBudget = {
      name: inner.name,
      ceiling: inner.ceiling,
      book: async (options) => {
        const booking = await inner.book(options);
        return withBookingCalls(booking, {
          step: (_round, stepOptions) =>
            new Promise((_resolve, reject) => {
              reads.push(Date.now() - T0);
              const signal = stepOptions?.signal;
              signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
            }),
          report: (report, reportOptions) => booking.report(report, reportOptions),
        });
      },
    };
    const cutoff = new AbortController();
    const { running, seen } = holder(budget, cutoff.signal);
    let result: unknown;
    void running.then((r) => {
      result = r;
    });
    await vi.advanceTimersByTimeAsync(2_500);
    expect(reads).toEqual([2_000]);
    cutoff.abort(new Error('cutoff'));
    await vi.advanceTimersByTimeAsync(0);
    expect(result).toEqual({ unavailable: expect.any(SemaphoreTimeoutError) });
    expect(seen).toEqual({});
  });

  it('the cutoff while it sleeps to its first slot ends it at once: unavailable, nothing run, nothing reported', async () => {
    const { table } = await bookedAhead(10, 20);
    const { budget, steps, reports } = recording(memoryBudget(10, table));
    const cutoff = new AbortController();
    const writes = watch();
    const { running, seen } = holder(budget, cutoff.signal, writes);
    let endedAt: number | undefined;
    const ended = running.then((result) => {
      endedAt = Date.now();
      return result;
    });
    await vi.advanceTimersByTimeAsync(500);
    cutoff.abort(new Error('cutoff'));
    const result = await settle(ended);
    expect(endedAt).toBe(T0 + 500);
    expect(result).toEqual({ unavailable: expect.any(SemaphoreTimeoutError) });
    expect(result).toMatchObject({ unavailable: { semaphore: NAME, min: 10, deadline: T0 + 10_000 } });
    expect(seen).toEqual({});
    expect(steps).toEqual([]);
    expect(reports).toEqual([]);
    expect(writes.stopped).toBe(true);
  });
});

describe('runUnderRate: pace and report', () => {
  it('an overloaded round steps the schedule once, and the pace lowers to where it then stands', async () => {
    const memory = memoryBudget(100);
    const { budget, overloadSteps, reports } = recording(memory);
    const p = pool();
    const { starts, body } = fortyWrites(p, halfRefused);
    const result = await settle(
      runUnderRate(budget, { pool: p, writes: 40, inFlight: 1 }, window(T0 + 10_000), undefined, body),
    );
    // The round from the first refusal (the 11th write) to the last refused one, MIN_ROUND_WRITES later.
    expect(overloadSteps().map((s) => s.round)).toEqual([halfRound]);
    expect(memory.table.item(NAME)!.rate).toBe(50);
    // Paced at 100/s until the cut, at 50/s after it.
    const cutAfter = 10 + MIN_ROUND_WRITES;
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(gaps.slice(0, cutAfter)).toEqual(Array(cutAfter).fill(10));
    expect(gaps.slice(cutAfter)).toEqual(Array(39 - cutAfter).fill(20));
    expect(p.startInterval).toBe(20);
    // The report is the last round: the writes since the cut, none refused.
    expect(reports).toEqual([{ accepted: 39 - cutAfter, throttled: 0, starved: false }]);
    expect(result).toEqual({ rate: 100 });
  });

  it('follows a lower rate another holder set meanwhile: its own step is dropped, the pace goes to the stored rate', async () => {
    const table = new MemoryBudgetTable();
    const p = pool();
    // 3 of 21 refused: the law alone would pace at 100 x 18/21 = 85.7.
    const { body } = fortyWrites(p, (i) => i === 10 || i === 20 || i === 30);
    await settle(
      runUnderRate(
        memoryBudget(100, table),
        { pool: p, writes: 40, inFlight: 1 },
        window(T0 + 10_000),
        undefined,
        async () => {
          // Another holder books after this one and halves the rate before this one's writes.
          const other = await memoryBudget(100, table).book({
            writes: 1,
            latestStart: T0 + 1_000,
            writeBy: T0 + 60_000,
          });
          await other.step({ accepted: 10, throttled: 10, starved: false });
          await body();
        },
      ),
    );
    expect(table.item(NAME)!.rate).toBe(50);
    expect(p.startInterval).toBe(20);
  });

  it('a step that fails falls back to the law applied to the round, and the schedule stays', async () => {
    const memory = memoryBudget(100);
    const { budget, overloadSteps } = recording(memory, { stepError: new Error('step timed out') });
    const p = pool();
    const { body } = fortyWrites(p, halfRefused);
    const result = await settle(
      runUnderRate(budget, { pool: p, writes: 40, inFlight: 1 }, window(T0 + 10_000), undefined, body),
    );
    expect(overloadSteps().map((s) => s.round)).toEqual([halfRound]);
    expect(p.startInterval).toBe(1000 / nextRate(100, halfRound, 100));
    expect(p.startInterval).toBe(20);
    expect(memory.table.item(NAME)!.rate).toBe(100);
    expect(result).toEqual({ rate: 100 });
  });

  it('a step that stalls is given up after releaseTimeoutMs: the pace falls back to the law applied to the round', async () => {
    // AbortSignal.timeout on the fake clock.
    vi.spyOn(AbortSignal, 'timeout').mockImplementation((ms) => {
      const timeout = new AbortController();
      setTimeout(() => timeout.abort(new DOMException('timed out', 'TimeoutError')), ms);
      return timeout.signal;
    });
    const { budget, overloadSteps } = recording(memoryBudget(100), { stepStalls: true });
    const p = pool();
    const { body } = fortyWrites(p, halfRefused);
    let result: unknown;
    void runUnderRate(
      budget,
      { pool: p, writes: 40, inFlight: 1 },
      window(T0 + 10_000),
      undefined,
      body,
    ).then((r) => {
      result = r;
    });
    await vi.advanceTimersByTimeAsync(5_000);
    // The round stepped at its last refusal (the 21st write, at 200 ms); 500 ms later the pace cut.
    expect(overloadSteps()).toEqual([{ round: halfRound, at: T0 + 200 }]);
    expect(p.startInterval).toBe(1000 / nextRate(100, halfRound, 100));
    expect(result).toEqual({ rate: 100 });
  });

  it('a step that leaves the schedule no lower than the pace falls back to the law', async () => {
    const { budget } = recording(memoryBudget(100), { stepView: { rate: 100, decreasedAt: 0 } });
    const p = pool();
    // Two refusals MIN_ROUND_WRITES apart: the round that steps is MIN_ROUND_WRITES + 1 writes, 2 refused.
    const refused = (i: number) => i === 10 || i === 10 + MIN_ROUND_WRITES;
    const { body } = fortyWrites(p, refused);
    await settle(
      runUnderRate(budget, { pool: p, writes: 40, inFlight: 1 }, window(T0 + 10_000), undefined, body),
    );
    const round = { accepted: MIN_ROUND_WRITES - 1, throttled: 2, starved: false };
    expect(p.startInterval).toBeCloseTo(1000 / nextRate(100, round, 100), 9);
    expect(p.startInterval).toBeCloseTo(1000 / ((100 * (MIN_ROUND_WRITES - 1)) / (MIN_ROUND_WRITES + 1)), 9);
  });

  it('a step still in flight when the writes have settled cuts first: the report is the round after it', async () => {
    const { budget, overloadSteps, reports } = recording(memoryBudget(100), { stepDelayMs: 100 });
    const p = pool();
    // Every other write of the last MIN_ROUND_WRITES + 1 refused: the last one completes an overloaded round.
    const first = 39 - MIN_ROUND_WRITES;
    const { body } = fortyWrites(p, (i) => i >= first && (i - first) % 2 === 0);
    await settle(
      runUnderRate(budget, { pool: p, writes: 40, inFlight: 1 }, window(T0 + 10_000), undefined, body),
    );
    expect(overloadSteps().map((s) => s.round)).toEqual([halfRound]);
    expect(reports).toEqual([{ accepted: 0, throttled: 0, starved: false }]);
  });

  it('reports once the writes have settled, those sent without being awaited too, and counts them from the write watch when given', async () => {
    const { budget, reports } = recording(memoryBudget(100));
    const p = pool();
    const writes = watch();
    let settledWrites = 0;
    const result = await settle(
      runUnderRate(budget, { pool: p, writes: 7, inFlight: 1 }, window(T0 + 10_000), writes, async () => {
        // The store counts 7 write requests; the pool runs 3 tasks (a task may make several requests).
        for (let i = 0; i < 3; i++) {
          void p.enqueue(async () => {
            writes.count += i === 0 ? 5 : 1;
            settledWrites++;
          });
        }
      }),
    );
    expect(settledWrites).toBe(3);
    expect(reports).toEqual([{ accepted: 7, throttled: 0, starved: false }]);
    expect(writes.stopped).toBe(true);
    expect(result).toEqual({ rate: 100 });
  });

  it('without a write watch counts the attempts that completed or were throttled, not those that failed otherwise, and lets go of the pool', async () => {
    const { budget, reports } = recording(memoryBudget(100));
    const p = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const on = vi.spyOn(p, 'on');
    const off = vi.spyOn(p, 'off');
    await settle(
      runUnderRate(budget, { pool: p, writes: 5, inFlight: 1 }, window(T0 + 10_000), undefined, async () => {
        await Promise.allSettled([
          p.enqueue(async () => 'ok'),
          p.enqueue(async () => 'ok'),
          p.enqueue(async () => {
            throw slowDown();
          }),
          p.enqueue(async () => {
            throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
          }),
          p.enqueue(async () => {
            throw new TypeError('a bug, not a request');
          }),
        ]);
      }),
    );
    // Two accepted and one refused: the reset and the bug sent nothing S3 counted as a write here.
    expect(reports).toEqual([{ accepted: 2, throttled: 1, starved: false }]);
    expect(off.mock.calls.map(([event]) => event).sort()).toEqual(
      on.mock.calls.map(([event]) => event).sort(),
    );
  });

  it('a queued booking reports its round as starved', async () => {
    const table = new MemoryBudgetTable();
    await memoryBudget(10, table).book({ writes: 5, latestStart: T0, writeBy: T0 + 60_000 });
    const { budget, reports } = recording(memoryBudget(10, table));
    await settle(
      runUnderRate(
        budget,
        { pool: pool(), writes: 3, inFlight: 1 },
        window(T0 + 20_000),
        undefined,
        async () => {},
      ),
    );
    expect(reports).toEqual([{ accepted: 0, throttled: 0, starved: true }]);
  });

  it('a booking whose round holds fewer slots than it asked reports starved; the booking of the rest, met in full, does not', async () => {
    // A new budget climbing from 10 writes/s to its ceiling: its bookings span a round each.
    const { budget, reports, books } = recording(memoryBudget(100, new MemoryBudgetTable(), 10));
    const p = new ExecutorPool({ concurrency: 15, retries: 0, timeout: 0 });
    await settle(
      runUnderRate(
        budget,
        { pool: p, writes: 15, inFlight: 15 },
        window(T0 + 20_000),
        undefined,
        async () => {
          await Promise.all(Array.from({ length: 15 }, () => p.enqueue(async () => 'ok')));
        },
      ),
    );
    // 10 writes/s: a round's span holds 10 of the 15; the other 5 book again, and are not queued.
    expect(books.map((b) => b.writes)).toEqual([15, 5]);
    expect(reports).toEqual([
      { accepted: 10, throttled: 0, starved: true },
      { accepted: 5, throttled: 0, starved: false },
    ]);
  });

  it('a report that fails is in reportErrors: the rate and the writes stand', async () => {
    const lost = new Error('report lost');
    const { budget, reports } = recording(memoryBudget(100), { reportError: lost });
    const p = pool();
    const done: number[] = [];
    const result = await settle(
      runUnderRate(budget, { pool: p, writes: 4, inFlight: 1 }, window(T0 + 10_000), undefined, async () => {
        await Promise.all([1, 2, 3, 4].map((n) => p.enqueue(async () => done.push(n))));
      }),
    );
    expect(result).toEqual({ rate: 100, reportErrors: [lost] });
    expect(done).toEqual([1, 2, 3, 4]);
    expect(reports).toEqual([{ accepted: 4, throttled: 0, starved: false }]);
  });

  it('work that throws: the error goes on, the slots pass unreported, the watch stops', async () => {
    const { budget, reports } = recording(memoryBudget(100));
    const broken = new TypeError('work broke');
    const writes = watch();
    const running = runUnderRate(
      budget,
      { pool: pool(), writes: 4, inFlight: 1 },
      window(T0 + 10_000),
      writes,
      async () => {
        throw broken;
      },
    );
    const rejected = expect(running).rejects.toBe(broken);
    await vi.runAllTimersAsync();
    await rejected;
    expect(reports).toEqual([]);
    expect(writes.stopped).toBe(true);
  });
});
