import { describe, expect, it, vi } from 'vitest';
import { ConcurrencyBudget, ExecutorPool } from '../../../lib/pool/index.js';
import { deferred, flush, useFakeTimersInEachTest } from './helpers.js';

/** Runs `count` tasks of `latencyMs` each (timers) and records when each one started. */
async function runTimed(pool: ExecutorPool, count: number, latencyMs: (i: number) => number) {
  const starts: number[] = [];
  let inFlight = 0;
  let peak = 0;
  const tasks = Array.from({ length: count }, (_, i) =>
    pool.enqueue(async () => {
      starts.push(Date.now());
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise((resolve) => setTimeout(resolve, latencyMs(i)));
      inFlight -= 1;
    }),
  );
  const all = Promise.all(tasks);
  await vi.runAllTimersAsync();
  await all;
  return { starts, peak, endedAt: Date.now() };
}

/** Runs one attempt of `ms` (timers) and resolves when it ended: under a fractional concurrency its slot then rests. */
async function oneAttempt(pool: ExecutorPool, ms: number): Promise<number> {
  const done = pool.enqueue(() => new Promise((resolve) => setTimeout(resolve, ms)));
  await vi.advanceTimersByTimeAsync(ms);
  await done;
  return Date.now();
}

describe('ExecutorPool fractional concurrency (an average in flight)', () => {
  useFakeTimersInEachTest();

  it('runs one attempt at a time and idles a third of each duration at 0.75: rate = 0.75 / latency', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    pool.setConcurrency(0.75);
    expect(pool.concurrency).toBe(0.75);
    const started = Date.now();
    const { starts, peak, endedAt } = await runTimed(pool, 30, () => 15);
    expect(peak).toBe(1);
    // Each start follows the previous one by 15 ms of work + 5 ms of rest: 50 per second, not 66.
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    for (const gap of gaps) expect(gap).toBeCloseTo(20, 5);
    const rate = 30 / ((endedAt - started) / 1000);
    expect(rate).toBeGreaterThan(48);
    expect(rate).toBeLessThanOrEqual(50.5);
  });

  it('follows the latency it sees: the rest is proportional to each attempt, so the rate stays n / latency', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    const latencies = [10, 40, 10, 40, 10, 40];
    const { starts } = await runTimed(pool, latencies.length, (i) => latencies[i]!);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // Busy half the time: each gap is twice the attempt before it.
    expect(gaps).toEqual(latencies.slice(0, -1).map((ms) => 2 * ms));
  });

  it('uses ceil(n) slots, each busy n / ceil(n) of the time (2.5: three slots, peak 3, average <= 2.5)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(2.5);
    expect(pool.concurrency).toBe(2.5);
    const started = Date.now();
    const { peak, endedAt } = await runTimed(pool, 60, () => 10);
    expect(peak).toBe(3);
    // 2.5 in flight on average at 10 ms: 250 per second (20 rounds of 12 ms, less the last rest: 238 ms).
    const rate = 60 / ((endedAt - started) / 1000);
    expect(rate).toBeLessThanOrEqual(253);
    expect(rate).toBeGreaterThan(230);
  });

  it('an integer concurrency never rests (no timer between attempts)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(1);
    const { starts } = await runTimed(pool, 5, () => 10);
    expect(starts.slice(1).map((t, i) => t - starts[i]!)).toEqual([10, 10, 10, 10]);
  });

  it('growing back to an integer ends the rests for later attempts', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    const first = await runTimed(pool, 3, () => 10);
    expect(first.starts.slice(1).map((t, i) => t - first.starts[i]!)).toEqual([20, 20]);
    pool.setConcurrency(1);
    const second = await runTimed(pool, 3, () => 10);
    expect(second.starts.slice(1).map((t, i) => t - second.starts[i]!)).toEqual([10, 10]);
  });

  it('a raised concurrency shortens the rests already running to what the new duty asks', async () => {
    // A tiny grant's rest (1/64 of a slot: 63 x a 500 ms attempt, 31.5 s) must not outlive it: the next
    // lease of the same pool grants a whole permit and its writes start at once (bench:load saw a lease of
    // 5 s with no write at all behind an earlier one's rest).
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(1 / 64);
    const slow = pool.enqueue(() => new Promise((resolve) => setTimeout(resolve, 500)));
    await vi.advanceTimersByTimeAsync(500);
    await slow;
    pool.setConcurrency(1);
    let startedAt: number | undefined;
    const next = pool.enqueue(async () => {
      startedAt = Date.now();
    });
    const enqueuedAt = Date.now();
    await vi.advanceTimersByTimeAsync(0);
    expect(startedAt).toBe(enqueuedAt);
    await next;
  });

  it.each([
    // At 0.1 the slot would rest 900 ms; at 0.5 it rests 100 ms from the attempt's end, 50 ms from now.
    {
      from: 0.1,
      to: 0.5,
      change: 'a concurrency raised to a fraction shortens the rest to what the new duty asks',
    },
    // At 0.5 the slot rests 100 ms; at 0.25 it would rest 300 ms: a rest already running is never lengthened.
    { from: 0.5, to: 0.25, change: 'a lowered concurrency never lengthens a rest already running' },
  ])('$change, counted from the attempt', async ({ from, to }) => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(from);
    const endedAt = await oneAttempt(pool, 100);
    await vi.advanceTimersByTimeAsync(50);
    pool.setConcurrency(to);
    let startedAt: number | undefined;
    const next = pool.enqueue(async () => {
      startedAt = Date.now();
    });
    await vi.advanceTimersByTimeAsync(50);
    expect(startedAt).toBe(endedAt + 100);
    await next;
    // The rest was moved, not doubled: no timer is left for its old end.
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a raised concurrency whose rest has already passed frees the slot at once, and only once', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.25);
    await oneAttempt(pool, 100);
    // At 0.25 the slot rests 300 ms; at 0.5 it would rest 100 ms, which have just passed.
    await vi.advanceTimersByTimeAsync(100);
    const gate = deferred();
    const starts: number[] = [];
    const queued = [1, 2].map(() =>
      pool.enqueue(() => {
        starts.push(Date.now());
        return gate.promise;
      }),
    );
    await flush();
    expect(starts).toEqual([]);
    pool.setConcurrency(0.5);
    await flush(); // no timer runs: the slot is free when setConcurrency returns
    expect(starts).toEqual([Date.now()]);
    // Set again (a governor sets it per sample): the ended rest frees no second slot.
    pool.setConcurrency(0.5);
    await flush();
    expect(starts).toHaveLength(1);
    gate.resolve();
    await vi.advanceTimersByTimeAsync(1_000);
    await Promise.all(queued);
  });

  it('an attempt that timed out (no answer) leaves no rest: its duration is a stall, not a rate', async () => {
    // At 0.42 a 2 s timeout rested the slot 2.7 s more: one stalled request left a hot prefix's lease idle
    // for 5 s (bench:load limit-bound). The retry starts as soon as the stalled work has settled.
    const pool = new ExecutorPool({ concurrency: 1, timeout: 100, retries: 1, retryDelay: 0 });
    pool.setConcurrency(0.5);
    const starts: number[] = [];
    const task = pool.enqueue(
      () =>
        new Promise<void>((resolve) => {
          starts.push(Date.now());
          // The first attempt ignores its abort and settles 50 ms after its timeout; the retry answers at once.
          setTimeout(resolve, starts.length === 1 ? 150 : 0);
        }),
    );
    await vi.advanceTimersByTimeAsync(1_000);
    await task;
    expect(starts).toHaveLength(2);
    expect(starts[1]! - starts[0]!).toBe(150);
  });

  it('refuses 0, negatives, NaN and Infinity with a RangeError naming the value', () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => pool.setConcurrency(bad)).toThrow(RangeError);
    }
    expect(() => pool.setConcurrency(0)).toThrow(/finite number > 0, got 0/);
    expect(pool.concurrency).toBe(1);
  });

  it('drain does not wait for a resting slot: the work is done when the last attempt settles', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.1);
    const done = pool.enqueue(() => new Promise((resolve) => setTimeout(resolve, 10)));
    await vi.advanceTimersByTimeAsync(10);
    await done;
    const drained = pool.drain().then(() => Date.now());
    await vi.advanceTimersByTimeAsync(0);
    const at = Date.now();
    expect(await drained).toBe(at);
  });
});

describe('ExecutorPool start interval (a rate cap on top of the concurrency cap)', () => {
  useFakeTimersInEachTest();

  it('spaces starts evenly however quick the answers, and keeps the concurrency cap', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    pool.setStartInterval(20);
    expect(pool.startInterval).toBe(20);
    // Answers in 1 ms: four slots would start a burst of four every millisecond; paced, one per 20 ms.
    const { starts, peak } = await runTimed(pool, 10, () => 1);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(20);
    for (const gap of gaps) expect(gap).toBeLessThanOrEqual(21);
    expect(peak).toBe(1);
    // Slow answers: the concurrency cap binds, not the interval (starts 20 ms apart up to 4 in flight).
    const slow = await runTimed(pool, 8, () => 200);
    expect(slow.peak).toBe(4);
  });

  it('a longer interval set while a paced start waits still starts it, at the new interval', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(20);
    const starts: number[] = [];
    const run = () =>
      pool.enqueue(async () => {
        starts.push(Date.now());
      });
    const tasks = [run(), run()];
    await flush();
    expect(starts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(5);
    pool.setStartInterval(50);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts).toHaveLength(2);
    expect(starts[1]! - starts[0]!).toBe(50);
    await Promise.all(tasks);
  });

  it('lateness does not add up: a start late by less than half an interval is counted at its slot', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    // Timers fire on whole ms: each start of a 10.4 ms interval comes up to 0.6 ms late. Counted when it
    // happened, 11 starts would take 10 x 11 = 110 ms; counted at their slots, 104 ms and its rounding.
    pool.setStartInterval(10.4);
    const { starts } = await runTimed(pool, 11, () => 1);
    expect(starts.at(-1)! - starts[0]!).toBeLessThanOrEqual(105);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(104);
    // Catching up never bunches starts: never closer than half an interval.
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(5.2);
    // After a pause (no work), no credit: the next two starts are a whole interval apart.
    await vi.advanceTimersByTimeAsync(1_000);
    const later = await runTimed(pool, 2, () => 1);
    expect(later.starts[1]! - later.starts[0]!).toBeGreaterThanOrEqual(10.4);
    pool.stop();
  });

  it('a start held back longer than half an interval (the in-flight cap) banks nothing: the next is a whole interval later', async () => {
    const one = new ExecutorPool({ concurrency: 1, timeout: 0 });
    one.setStartInterval(10);
    // The first attempt holds the only slot for 25 ms: the second starts 15 ms after its slot, so it is
    // counted when it started, and the third (instant answers) waits a whole interval after it.
    const { starts } = await runTimed(one, 3, (i) => (i === 0 ? 25 : 1));
    expect(starts[1]! - starts[0]!).toBe(25);
    expect(starts[2]! - starts[1]!).toBeGreaterThanOrEqual(10);
    one.stop();
  });

  it('a start exactly half an interval late is still counted at its slot: the next one keeps the grid', async () => {
    const one = new ExecutorPool({ concurrency: 1, timeout: 0 });
    one.setStartInterval(10);
    // The first attempt holds the only slot for 15 ms: the second starts 5 ms (half an interval) after its
    // slot at 10 and is counted there, so the third (instant answers) starts at 20, not 25.
    const { starts } = await runTimed(one, 3, (i) => (i === 0 ? 15 : 1));
    expect(starts.map((t) => t - starts[0]!)).toEqual([0, 15, 20]);
    one.stop();
  });

  it('applies a changed interval at once and 0 turns pacing off; refuses nonsense', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(1_000);
    const first = runTimed(pool, 3, () => 1);
    await vi.advanceTimersByTimeAsync(5);
    // One started; the next would wait a second. Turning pacing off starts the rest now.
    pool.setStartInterval(0);
    const { starts } = await first;
    expect(starts[2]! - starts[0]!).toBeLessThan(10);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => pool.setStartInterval(bad)).toThrow(RangeError);
    }
    expect(() => pool.setStartInterval(-1)).toThrow('startInterval must be a finite number >= 0, got -1');
    pool.stop();
  });

  it('a shortened interval applies to the start already waiting (its timer is not the old, longer one)', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(1_000);
    const started = Date.now();
    const first = runTimed(pool, 2, () => 1);
    await vi.advanceTimersByTimeAsync(5);
    pool.setStartInterval(10);
    const { starts } = await first;
    expect(starts[1]! - started).toBeLessThanOrEqual(11);
    pool.stop();
  });

  it('a shortened interval leaves no timer of the longer one armed', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(60_000);
    const done = Promise.all([pool.enqueue(async () => 1), pool.enqueue(async () => 2)]);
    await vi.advanceTimersByTimeAsync(5);
    pool.setStartInterval(10);
    await vi.advanceTimersByTimeAsync(10);
    expect(await done).toEqual([1, 2]);
    expect(vi.getTimerCount()).toBe(0);
    pool.stop();
  });
});

describe("ExecutorPool start interval: unpaced tasks (a Database's reads)", () => {
  useFakeTimersInEachTest();

  /** Enqueues `kinds` in order (w: paced, r: `paced: false`), instant tasks, and records each start. */
  async function runMix(pool: ExecutorPool, kinds: string, priorityOf: (i: number) => number = () => 0) {
    const started = Date.now();
    const starts: Array<{ kind: string; at: number }> = [];
    const tasks = [...kinds].map((kind, i) =>
      pool.enqueue(
        async () => {
          starts.push({ kind, at: Date.now() - started });
        },
        { paced: kind === 'w', priority: priorityOf(i) },
      ),
    );
    await vi.runAllTimersAsync();
    await Promise.all(tasks);
    return starts;
  }

  it('spaces only the paced tasks: reads start at once, writes stay an interval apart whatever reads come between', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    pool.setStartInterval(20);
    const starts = await runMix(pool, 'rrrwrwrrw');
    const writes = starts.filter((s) => s.kind === 'w').map((s) => s.at);
    const reads = starts.filter((s) => s.kind === 'r').map((s) => s.at);
    // Spacing every start would have put the third write at 8 x 20 = 160 ms; spacing writes only, at 40.
    expect(writes).toEqual([0, 20, 40]);
    // Every read starts at once: a write waiting for its slot holds back only the writes behind it.
    expect(reads).toEqual([0, 0, 0, 0, 0, 0]);
    pool.stop();
  });

  it('two writes queued back to back (their reads done at once) stay an interval apart', async () => {
    const pool = new ExecutorPool({ concurrency: 8, timeout: 0 });
    pool.setStartInterval(25);
    // The writes run first (a higher priority, as a Database's continuation writes do), the reads after.
    const starts = await runMix(pool, 'wwwrr', (i) => (i < 3 ? 1 : 0));
    expect(starts.filter((s) => s.kind === 'w').map((s) => s.at)).toEqual([0, 25, 50]);
    pool.stop();
  });

  it("an unpaced task skips the queue when a slot is free, and does not move the next write's turn", async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(30);
    const starts = await runMix(pool, 'wrw');
    expect(starts).toEqual([
      { kind: 'w', at: 0 },
      { kind: 'r', at: 0 },
      { kind: 'w', at: 30 },
    ]);
    pool.stop();
  });

  it('an unpaced task passes a paced task the interval holds back (a read never waits for a write slot)', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    pool.setStartInterval(1_000);
    // The second write waits a second for its turn; the read enqueued behind it starts at once.
    expect(await runMix(pool, 'wwr')).toEqual([
      { kind: 'w', at: 0 },
      { kind: 'r', at: 0 },
      { kind: 'w', at: 1_000 },
    ]);
    pool.stop();
  });

  it('refuses a paced option that is not a boolean', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    await expect(pool.enqueue(() => 1, { paced: 'no' as unknown as boolean })).rejects.toMatchObject({
      name: 'RangeError',
      message: 'paced must be a boolean, got no',
    });
    pool.stop();
  });
});

describe('ExecutorPool start interval with a shared ConcurrencyBudget (the handler pools)', () => {
  useFakeTimersInEachTest();

  it('a budget slot offered too soon is handed on, and the paced pool takes one when its interval has passed', async () => {
    const budget = new ConcurrencyBudget(1);
    const other = new ExecutorPool({ concurrency: 1, timeout: 0, budget });
    const paced = new ExecutorPool({ concurrency: 4, timeout: 0, budget });
    paced.setStartInterval(20);
    // The other pool holds the only budget slot for 50 ms; the paced pool waits in the budget's line.
    const holding = other.enqueue(() => new Promise((resolve) => setTimeout(resolve, 50)));
    const started = Date.now();
    const starts: number[] = [];
    const tasks = Array.from({ length: 3 }, () =>
      paced.enqueue(async () => {
        starts.push(Date.now() - started);
      }),
    );
    await vi.runAllTimersAsync();
    await Promise.all([holding, ...tasks]);
    // Offered the slot at 50 ms, then again at once after each instant task: each later offer is too soon.
    expect(starts).toEqual([50, 70, 90]);
    expect(budget.available).toBe(1);
    other.stop();
    paced.stop();
  });
});
