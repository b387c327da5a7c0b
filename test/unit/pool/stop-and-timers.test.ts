// What stop(), caller aborts and timeouts leave behind: every live caller answered once, no timer armed
// that nothing needs, and nothing counted twice.
import { describe, expect, it, vi } from 'vitest';
import {
  CircuitOpenError,
  circuitBreaker,
  ExecutorPool,
  PoolStoppedError,
  TaskAbortedError,
} from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

describe('stop() with attempts that finished in any order', () => {
  it('rejects every caller still running, whichever attempts finished first', async () => {
    // Oldest first, a middle one, two neighbours (newer then older): the rest must still be reached.
    for (const finishedFirst of [[0], [1], [2, 1]]) {
      const pool = new ExecutorPool({ concurrency: 4, timeout: 0 });
      const gates = [0, 1, 2, 3].map(() => deferred<string>());
      const signals: AbortSignal[] = [];
      const results = gates.map((gate) =>
        pool
          .enqueue((ctx) => {
            signals.push(ctx.signal);
            return gate.promise;
          })
          .catch((e: unknown) => e),
      );
      await flush();
      for (const i of finishedFirst) {
        gates[i]!.resolve('done');
        expect(await results[i]).toBe('done');
      }
      pool.stop();
      for (const i of [0, 1, 2, 3].filter((n) => !finishedFirst.includes(n))) {
        expect(signals[i]!.aborted).toBe(true);
        expect(await results[i]).toBeInstanceOf(PoolStoppedError);
      }
      for (const i of finishedFirst) expect(signals[i]!.aborted).toBe(false);
      for (const gate of gates) gate.resolve('late');
      await pool.drain();
      // Work that returns after stop() answered its caller counts as failed, not also as processed.
      expect(pool.getStats()).toMatchObject({
        activeCount: 0,
        processedCount: finishedFirst.length,
        errorCount: 4 - finishedFirst.length,
      });
    }
  });

  it('a drain() waiting on queued work resolves when stop() rejects it', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0, paused: true });
    const queued = pool.enqueue(async () => 'never').catch((e: unknown) => e);
    const drained = pool.drain();
    expect(await stateOf(drained)).toBe('pending');
    pool.stop();
    expect(await stateOf(drained)).toBe('fulfilled');
    expect(await queued).toBeInstanceOf(PoolStoppedError);
  });
});

/** Attempts time out after 20 ms; a single transient failure opens the breaker. */
function timingOutBreakerPool(): ExecutorPool {
  return new ExecutorPool({
    concurrency: 1,
    timeout: 20,
    retries: 0,
    circuitBreaker: circuitBreaker({ threshold: 1, minimumRequests: 1, timeout: 1_000 }),
  });
}

describe('timers', () => {
  useFakeTimersInEachTest();

  it('a pool without a timeout arms no timer for its running attempts', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    const gate = deferred();
    const running = [pool.enqueue(() => gate.promise), pool.enqueue(() => gate.promise, { timeout: 0 })];
    await flush();
    expect(pool.getStats().activeCount).toBe(2);
    expect(vi.getTimerCount()).toBe(0);
    gate.resolve();
    await Promise.all(running);
  });

  it('an attempt that finishes while others with shorter timeouts wait leaves no timer once all are done', async () => {
    const pool = new ExecutorPool({ concurrency: 3, timeout: 1_000 });
    const early = deferred();
    const late = deferred();
    // Per-task timeouts shorter than the pool's, started in that order: 500 ms, then 400 ms ahead of it.
    const results = [
      pool.enqueue(() => late.promise),
      pool.enqueue(() => early.promise, { timeout: 500 }),
      pool.enqueue(() => late.promise, { timeout: 400 }),
    ];
    await flush();
    early.resolve();
    await results[1];
    late.resolve();
    await Promise.all(results);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stop() disarms the pace timer of a start the interval holds back', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    pool.setStartInterval(60_000);
    const first = pool.enqueue(async () => 'first');
    const held = pool.enqueue(async () => 'held').catch((e: unknown) => e);
    expect(await first).toBe('first');
    expect(vi.getTimerCount()).toBe(1);
    pool.stop();
    expect(vi.getTimerCount()).toBe(0);
    expect(await held).toBeInstanceOf(PoolStoppedError);
  });

  it('a per-task timeout of 0 disables the pool’s timeout for that task', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 10, retries: 0 });
    const slow = () => new Promise((resolve) => setTimeout(() => resolve('slow'), 50));
    const untimed = pool.enqueue(slow, { timeout: 0 });
    const timed = pool.enqueue(slow).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(50);
    expect(await untimed).toBe('slow');
    expect(await timed).toMatchObject({ name: 'TaskTimeoutError' });
  });

  it('an attempt abandoned by its caller reports nothing more when its timeout passes', async () => {
    const pool = timingOutBreakerPool();
    const errors: unknown[] = [];
    pool.on('pool:taskError', ({ error }) => errors.push(error));
    const caller = new AbortController();
    const work = deferred();
    const outcome = pool.enqueue(() => work.promise, { signal: caller.signal }).catch((e: unknown) => e);
    await flush();
    caller.abort(new Error('client gone'));
    const error = (await outcome) as TaskAbortedError;
    expect(error).toBeInstanceOf(TaskAbortedError);
    expect(error.message).toBe('task aborted by its signal');
    expect((error.cause as Error).message).toBe('client gone');
    await vi.advanceTimersByTimeAsync(100);
    // Not a second failure: no taskError event, and the breaker did not count a timeout.
    expect(errors).toEqual([]);
    expect(pool.circuitState).toBe('closed');
    work.resolve();
    await flush();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 0, errorCount: 1 });
    expect(await pool.enqueue(async () => 'open for business')).toBe('open for business');
  });

  it('a timed-out attempt counts as a failure for the breaker', async () => {
    const pool = timingOutBreakerPool();
    const outcome = pool.enqueue(() => new Promise(() => {})).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(20);
    expect(await outcome).toMatchObject({ name: 'TaskTimeoutError' });
    expect(pool.circuitState).toBe('open');
    await expect(pool.enqueue(async () => 'x')).rejects.toBeInstanceOf(CircuitOpenError);
  });

  it('resume() starts several queued tasks at once, each with its own queue wait', async () => {
    const pool = new ExecutorPool({ concurrency: 3, timeout: 0, paused: true });
    const waits: number[] = [];
    pool.on('pool:taskStarted', ({ queueWaitMs }) => waits.push(queueWaitMs));
    const results = [pool.enqueue(async () => 1)];
    await vi.advanceTimersByTimeAsync(10);
    results.push(
      pool.enqueue(async () => 2),
      pool.enqueue(async () => 3),
    );
    await vi.advanceTimersByTimeAsync(15);
    pool.resume();
    expect(await Promise.all(results)).toEqual([1, 2, 3]);
    expect(waits).toEqual([25, 15, 15]);
  });
});

describe('retry failures seen by the breaker', () => {
  it('a retryable failure still retried counts for the breaker', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      timeout: 0,
      retries: 1,
      retryDelay: 0,
      circuitBreaker: circuitBreaker({ threshold: 1, minimumRequests: 1, timeout: 60_000 }),
    });
    const outcome = pool
      .enqueue(async () => {
        throw awsError('SlowDown', 503);
      })
      .catch((e: unknown) => e);
    // The retry re-enters the queue and is refused there: the breaker opened on the first failure.
    expect(await outcome).toBeInstanceOf(CircuitOpenError);
    expect(pool.getStats()).toMatchObject({ retryCount: 1, errorCount: 1 });
  });
});
