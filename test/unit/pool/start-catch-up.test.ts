// The start interval on a slot schedule (`setStartInterval(ms, { catchUpMs })`) and the paced queue's rule
// (an unpaced task passes a paced one the interval holds back), through the pool's three ways of starting a
// task: its own pump, a shared budget's slot offer (#onSlotGranted), and the breaker's admission.
import { describe, expect, it, vi } from 'vitest';
import {
  CircuitOpenError,
  ConcurrencyBudget,
  circuitBreaker,
  type EnqueueOptions,
  ExecutorPool,
} from '../../../lib/pool/index.js';
import { awsError, flush, useFakeTimersInEachTest } from './helpers.js';

interface Start {
  readonly name: string;
  readonly at: number;
}

/** Enqueues tasks that record when they start (performance.now, ms since `t0`) and then take `ms`. */
function recorder(pool: ExecutorPool, t0 = performance.now()) {
  const starts: Start[] = [];
  const run = (name: string, ms = 0, options: EnqueueOptions = {}) =>
    pool.enqueue(async () => {
      starts.push({ name, at: performance.now() - t0 });
      if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms));
      return name;
    }, options);
  return { starts, run, at: () => starts.map((s) => s.at) };
}

/** Runs `count` paced writes on a pool of one slot whose first write holds it `firstMs`: a start made late. */
async function lateByTheCap(catchUpMs: number | undefined, firstMs: number, count = 6) {
  const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
  pool.setStartInterval(10, catchUpMs === undefined ? undefined : { catchUpMs });
  const { run, at } = recorder(pool);
  const done = Promise.all(Array.from({ length: count }, (_, i) => run(`w${i}`, i === 0 ? firstMs : 0)));
  await vi.runAllTimersAsync();
  await done;
  pool.stop();
  return at();
}

describe('ExecutorPool start interval: catching up late starts (catchUpMs)', () => {
  useFakeTimersInEachTest();

  it('a start late by up to catchUpMs keeps its slot, and the starts behind it catch up to the grid', async () => {
    // The only slot is busy until 40 ms: the second write is 30 ms late for its slot at 10. Kept at its
    // slot, the writes for the slots at 20, 30 and 40 start with it, and the schedule goes on from 40.
    expect(await lateByTheCap(50, 40)).toEqual([0, 40, 40, 40, 40, 50]);
  });

  it('without catchUpMs the same lateness (over half an interval) restarts the schedule: the rate is lost', async () => {
    expect(await lateByTheCap(undefined, 40)).toEqual([0, 40, 50, 60, 70, 80]);
  });

  it('a start exactly catchUpMs late still keeps its slot; one a ms later restarts the schedule', async () => {
    expect(await lateByTheCap(30, 40)).toEqual([0, 40, 40, 40, 40, 50]);
    expect(await lateByTheCap(30, 41)).toEqual([0, 41, 51, 61, 71, 81]);
  });

  it('a longer pause restarts the schedule: no burst of the slots the pause missed', async () => {
    // 90 ms late with 50 to catch up: counted when it started, so the next write is a whole interval later.
    const starts = await lateByTheCap(50, 100);
    expect(starts).toEqual([0, 100, 110, 120, 130, 140]);
  });

  it('after an idle pause longer than catchUpMs, writes start an interval apart again', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
    pool.setStartInterval(10, { catchUpMs: 50 });
    const { run, at } = recorder(pool);
    await run('w0');
    await vi.advanceTimersByTimeAsync(200);
    const later = Promise.all([run('w1'), run('w2'), run('w3')]);
    await vi.runAllTimersAsync();
    await later;
    expect(at()).toEqual([0, 200, 210, 220]);
    pool.stop();
  });

  it('a busy event loop (the pace timer fires late) costs no rate: the starts catch up to the grid', async () => {
    const fakeNow = performance.now.bind(performance);
    let lag = 0;
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => fakeNow() + lag);
    try {
      const timeline = async (catchUpMs: number | undefined) => {
        lag = 0;
        const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
        pool.setStartInterval(10, catchUpMs === undefined ? undefined : { catchUpMs });
        const { run, at } = recorder(pool);
        // The loop is blocked from 5 ms for 30 ms: the timer due at 10 runs at 40.
        const block = setTimeout(() => {
          lag += 30;
        }, 5);
        const done = Promise.all(Array.from({ length: 10 }, (_, i) => run(`w${i}`)));
        await vi.runAllTimersAsync();
        await done;
        clearTimeout(block);
        pool.stop();
        return at();
      };
      // Kept at their slots: the 10th write starts at 90, nine intervals after the first, as without the lag.
      expect(await timeline(50)).toEqual([0, 40, 40, 40, 40, 50, 60, 70, 80, 90]);
      // Half an interval to catch up: the lag is carried by every later start.
      expect(await timeline(undefined)).toEqual([0, 40, 50, 60, 70, 80, 90, 100, 110, 120]);
    } finally {
      clock.mockRestore();
    }
  });

  it('catchUpMs 0 keeps only starts exactly on their slot', async () => {
    expect(await lateByTheCap(0, 10)).toEqual([0, 10, 20, 30, 40, 50]);
    expect(await lateByTheCap(0, 11)).toEqual([0, 11, 21, 31, 41, 51]);
  });

  it('each setStartInterval call sets the catch-up: one without it is back to half an interval', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setStartInterval(10, { catchUpMs: 50 });
    pool.setStartInterval(10);
    const { run, at } = recorder(pool);
    const done = Promise.all([run('w0', 40), run('w1'), run('w2')]);
    await vi.runAllTimersAsync();
    await done;
    expect(at()).toEqual([0, 40, 50]);
    pool.stop();
  });

  it('refuses a catchUpMs that is not a finite number >= 0 with a RangeError naming it, and keeps the interval', () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    pool.setStartInterval(20);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, -0.5]) {
      let thrown: unknown;
      try {
        pool.setStartInterval(10, { catchUpMs: bad });
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(RangeError);
      expect(thrown).toMatchObject({
        name: 'RangeError',
        message: `catchUpMs must be a finite number >= 0, got ${bad}`,
      });
      expect(pool.startInterval).toBe(20);
    }
    pool.stop();
  });
});

describe('ExecutorPool paced queue: order across paced and unpaced tasks', () => {
  useFakeTimersInEachTest();

  it('starts by priority across the two kinds; equal priorities start the paced task first', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0, paused: true });
    const { run, starts } = recorder(pool);
    const done = Promise.all([
      run('r0', 0, { paced: false }),
      run('w0'),
      run('r1', 0, { paced: false, priority: 1 }),
      run('w2', 0, { priority: 2 }),
    ]);
    pool.resume();
    await vi.runAllTimersAsync();
    await done;
    expect(starts.map((s) => s.name)).toEqual(['w2', 'r1', 'w0', 'r0']);
    pool.stop();
  });

  it('an unpaced task of lower priority passes a paced one the interval holds back, and only then', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0, paused: true });
    pool.setStartInterval(100);
    const { run, starts } = recorder(pool);
    const done = Promise.all([
      run('w-high', 0, { priority: 5 }),
      run('w-next', 0, { priority: 5 }),
      run('r-low', 0, { paced: false }),
      run('r-lower', 0, { paced: false, priority: -1 }),
    ]);
    pool.resume();
    await vi.runAllTimersAsync();
    await done;
    // The first write's slot is free: priority decides. The second's is 100 ms away: the reads pass it.
    expect(starts).toEqual([
      { name: 'w-high', at: 0 },
      { name: 'r-low', at: 0 },
      { name: 'r-lower', at: 0 },
      { name: 'w-next', at: 100 },
    ]);
    pool.stop();
  });

  it('a read enqueued while a write waits for its slot starts at once, in a free slot', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(50);
    const { run, starts } = recorder(pool);
    const writes = [run('w0'), run('w1')];
    await vi.advanceTimersByTimeAsync(10);
    const read = run('r0', 0, { paced: false });
    await flush();
    expect(starts).toEqual([
      { name: 'w0', at: 0 },
      { name: 'r0', at: 10 },
    ]);
    await vi.runAllTimersAsync();
    await Promise.all([...writes, read]);
    expect(starts.at(-1)).toEqual({ name: 'w1', at: 50 });
    pool.stop();
  });
});

/** A budget of `total` slots shared by a pool paced at `intervalMs` and another one, which `hold`s a slot for a while. */
function budgetPools(total: number, intervalMs: number) {
  const budget = new ConcurrencyBudget(total);
  const paced = new ExecutorPool({ concurrency: 4, timeout: 0, budget });
  const other = new ExecutorPool({ concurrency: 1, timeout: 0, budget });
  paced.setStartInterval(intervalMs);
  const hold = (ms: number) => other.enqueue(() => new Promise((resolve) => setTimeout(resolve, ms)));
  return { budget, paced, other, hold };
}

describe('ExecutorPool paced queue: the budget and the breaker respect a held write', () => {
  useFakeTimersInEachTest();

  it("a budget slot offered while the write's slot is ahead starts the read behind it, not the write", async () => {
    const { budget, paced, other, hold } = budgetPools(2, 1_000);
    const { run, starts } = recorder(paced);
    // The first write holds one budget slot for 2 s; the other pool holds the second for 50 ms.
    const first = run('w0', 2_000);
    const holding = hold(50);
    await flush();
    expect(budget.available).toBe(0);
    const queued = [run('w1'), run('r0', 0, { paced: false })];
    await flush();
    expect(starts.map((s) => s.name)).toEqual(['w0']);
    // At 50 ms the budget offers the freed slot: the read takes it; the write keeps its slot at 1 s.
    await vi.advanceTimersByTimeAsync(50);
    await holding;
    expect(starts).toEqual([
      { name: 'w0', at: 0 },
      { name: 'r0', at: 50 },
    ]);
    await vi.runAllTimersAsync();
    await Promise.all([first, ...queued]);
    expect(starts.at(-1)).toEqual({ name: 'w1', at: 1_000 });
    expect(budget.inUse).toBe(0);
    other.stop();
    paced.stop();
  });

  it('a budget slot offered while only a held write is queued is handed back, and the write starts at its slot', async () => {
    const { budget, paced, other, hold } = budgetPools(1, 100);
    const { run, starts } = recorder(paced);
    await run('w0');
    const holding = hold(20);
    const queued = run('w1');
    await vi.advanceTimersByTimeAsync(20);
    await holding;
    // Offered at 20 ms, 80 ms before the write's slot: refused, so the slot is free for others meanwhile.
    expect(starts.map((s) => s.name)).toEqual(['w0']);
    expect(budget.available).toBe(1);
    await vi.runAllTimersAsync();
    await queued;
    expect(starts.at(-1)).toEqual({ name: 'w1', at: 100 });
    other.stop();
    paced.stop();
  });

  it('an open breaker refuses the read that comes up while a write is held, and the write only at its slot', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 0,
      timeout: 0,
      circuitBreaker: circuitBreaker({ threshold: 0.5, minimumRequests: 1, timeout: 1_000 }),
    });
    pool.setStartInterval(100);
    // Refusing past the held write would pop nothing and throw inside the settle of the failed attempt.
    const escaped: unknown[] = [];
    const onEscape = (reason: unknown) => escaped.push(reason);
    process.on('unhandledRejection', onEscape);
    const t0 = performance.now();
    const settled: Array<{ name: string; at: number; error: unknown }> = [];
    const track = (name: string, p: Promise<unknown>) =>
      p.catch((error: unknown) => settled.push({ name, at: performance.now() - t0, error }));
    // The first write fails at 10 ms and opens the breaker; the next write's slot is at 100.
    const failing = track(
      'w0',
      pool.enqueue(async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        throw awsError('SlowDown', 503);
      }),
    );
    const write = track(
      'w1',
      pool.enqueue(async () => 'w1'),
    );
    const read = track(
      'r0',
      pool.enqueue(async () => 'r0', { paced: false }),
    );
    await vi.advanceTimersByTimeAsync(10);
    expect(pool.circuitState).toBe('open');
    expect(settled.map((s) => [s.name, s.at])).toEqual([
      ['w0', 10],
      ['r0', 10],
    ]);
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all([failing, write, read]);
    expect(settled.map((s) => [s.name, s.at])).toEqual([
      ['w0', 10],
      ['r0', 10],
      ['w1', 100],
    ]);
    expect(settled[1]!.error).toBeInstanceOf(CircuitOpenError);
    expect(settled[2]!.error).toBeInstanceOf(CircuitOpenError);
    expect(pool.getStats().queueSize).toBe(0);
    process.off('unhandledRejection', onEscape);
    expect(escaped).toEqual([]);
    pool.stop();
  });
});
