import { describe, expect, it, vi } from 'vitest';
import { ExecutorPool, TaskTimeoutError } from '../../../lib/pool/index.js';
import { awsError, type Deferred, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

/** Tracks work that is really executing (entered and not yet returned), independent of the pool's view. */
function workTracker() {
  let running = 0;
  let peak = 0;
  return {
    enter() {
      running += 1;
      peak = Math.max(peak, running);
    },
    leave() {
      running -= 1;
    },
    get running() {
      return running;
    },
    get peak() {
      return peak;
    },
  };
}

describe('ExecutorPool concurrency cap', () => {
  useFakeTimersInEachTest();

  it('never runs more than `concurrency` tasks at once', async () => {
    const pool = new ExecutorPool({ concurrency: 3, timeout: 0 });
    const work = workTracker();
    const gates: Deferred<void>[] = [];
    const results = Array.from({ length: 10 }, (_, i) =>
      pool.enqueue(async () => {
        work.enter();
        const gate = deferred();
        gates.push(gate);
        await gate.promise;
        work.leave();
        return i;
      }),
    );
    await flush();
    expect(work.running).toBe(3);
    expect(pool.getStats()).toMatchObject({ activeCount: 3, queueSize: 7 });
    while (gates.length > 0) {
      gates.shift()!.resolve();
      await flush();
    }
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(work.peak).toBe(3);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 10 });
  });

  it('rejects a timed-out caller at once, aborts its signal, and keeps the slot until the work settles', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 100, retries: 0 });
    const stuck = deferred();
    let seenSignal: AbortSignal | undefined;
    const first = pool.enqueue(async (ctx) => {
      seenSignal = ctx.signal;
      await stuck.promise; // ignores the abort on purpose: slow to notice, like a socket mid-write
      return 'late';
    });
    let secondStarted = false;
    const second = pool.enqueue(async () => {
      secondStarted = true;
      return 'second';
    });
    const firstOutcome = first.catch((error: unknown) => error);

    await vi.advanceTimersByTimeAsync(100);
    const error = await firstOutcome;
    expect(error).toBeInstanceOf(TaskTimeoutError);
    expect((error as TaskTimeoutError).name).toBe('TaskTimeoutError');
    expect(seenSignal?.aborted).toBe(true);
    expect(seenSignal?.reason).toBeInstanceOf(TaskTimeoutError);
    // The timed-out work still occupies the only slot.
    expect(secondStarted).toBe(false);
    expect(pool.getStats()).toMatchObject({ activeCount: 1, queueSize: 1, errorCount: 1 });

    stuck.resolve();
    expect(await second).toBe('second');
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 1, errorCount: 1 });
  });

  it('does not run a timed-out task’s retry beside its still-running first attempt when the cap is full', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 50, retries: 1, retryDelay: 0 });
    const work = workTracker();
    const firstAttempt = deferred();
    const attempts: number[] = [];
    const result = pool.enqueue(async (ctx) => {
      attempts.push(ctx.attempt);
      work.enter();
      if (ctx.attempt === 1) await firstAttempt.promise;
      work.leave();
      return ctx.attempt;
    });
    await vi.advanceTimersByTimeAsync(50);
    // Timed out and retryable: the retry is queued, but the zombie attempt holds the only slot.
    expect(pool.getStats()).toMatchObject({ activeCount: 1, queueSize: 1, retryCount: 1 });
    expect(attempts).toEqual([1]);
    expect(await stateOf(result)).toBe('pending');
    firstAttempt.resolve();
    expect(await result).toBe(2);
    expect(attempts).toEqual([1, 2]);
    expect(work.peak).toBe(1);
  });

  it('keeps in-flight work under the cap through a mixed load of timeouts, retries and failures', async () => {
    const cap = 4;
    const pool = new ExecutorPool({
      concurrency: cap,
      timeout: 30,
      retries: 2,
      retryDelay: 5,
      maxRetryDelay: 20,
    });
    const work = workTracker();
    let maxReported = 0;
    pool.on('pool:taskStarted', ({ activeCount }) => {
      maxReported = Math.max(maxReported, activeCount);
    });
    let seed = 42;
    const random = () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const tasks = Array.from({ length: 60 }, () => {
      const duration = Math.floor(random() * 60); // half of them outlive the 30 ms timeout
      const fails = random() < 0.2;
      return pool
        .enqueue(async () => {
          work.enter();
          await new Promise((resolve) => setTimeout(resolve, duration));
          work.leave();
          if (fails) throw awsError('SlowDown', 503);
          return duration;
        })
        .then(
          () => 'ok',
          (error: unknown) => (error as Error).name,
        );
    });
    await vi.advanceTimersByTimeAsync(10_000);
    const outcomes = await Promise.all(tasks);
    expect(outcomes).toHaveLength(60);
    expect(outcomes.some((o) => o === 'TaskTimeoutError')).toBe(true);
    expect(work.peak).toBeLessThanOrEqual(cap);
    expect(maxReported).toBeLessThanOrEqual(cap);
    expect(work.running).toBe(0);
    const stats = pool.getStats();
    expect(stats.processedCount + stats.errorCount).toBe(60);
    expect(stats.retryCount).toBeGreaterThan(0);
  });

  it('uses a per-task timeout over the pool default', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 10_000, retries: 0 });
    const slow = pool.enqueue(
      (ctx) =>
        new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      {
        timeout: 20,
      },
    );
    const outcome = slow.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(19);
    expect(await stateOf(slow)).toBe('pending');
    await vi.advanceTimersByTimeAsync(1);
    expect(await outcome).toBeInstanceOf(TaskTimeoutError);
  });
});

describe('ExecutorPool.setConcurrency', () => {
  it('starts queued work at once when growing, and aborts nothing when shrinking', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const gates = Array.from({ length: 6 }, () => deferred());
    const signals: AbortSignal[] = [];
    const started: number[] = [];
    const results = gates.map((gate, i) =>
      pool.enqueue(async (ctx) => {
        signals.push(ctx.signal);
        started.push(i);
        await gate.promise;
        return i;
      }),
    );
    await flush();
    expect(started).toEqual([0]);
    pool.setConcurrency(4);
    expect(pool.concurrency).toBe(4);
    await flush();
    expect(started).toEqual([0, 1, 2, 3]);

    pool.setConcurrency(2);
    await flush();
    expect(signals.every((s) => !s.aborted)).toBe(true);
    expect(pool.getStats().activeCount).toBe(4);
    gates[0]!.resolve();
    gates[1]!.resolve();
    await flush();
    // In flight dropped from 4 to 2: still not below the new cap of 2.
    expect(started).toEqual([0, 1, 2, 3]);
    gates[2]!.resolve();
    await flush();
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(pool.getStats().activeCount).toBe(2);
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('refuses a cap below 1', () => {
    const pool = new ExecutorPool({ concurrency: 2 });
    expect(() => pool.setConcurrency(0)).toThrow(RangeError);
    expect(() => new ExecutorPool({ concurrency: 1.5 })).toThrow(RangeError);
    expect(pool.concurrency).toBe(2);
  });
});
