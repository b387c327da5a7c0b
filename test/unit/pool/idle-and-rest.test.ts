// When the pool is idle (drain, pool:drained), what a fractional slot's rest holds back, and what a refused
// or abandoned task leaves behind.
import { describe, expect, it, vi } from 'vitest';
import {
  CircuitOpenError,
  circuitBreaker,
  ExecutorPool,
  PoolStoppedError,
  TaskAbortedError,
} from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

describe('idle', () => {
  it('drain() waits for running work, and a paused pool with queued work is not drained', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise);
    const queued = pool.enqueue(async () => 'queued');
    const paused = pool.pause();
    const drained = pool.drain();
    gate.resolve();
    await running;
    await paused;
    expect(await stateOf(drained)).toBe('pending'); // nothing runs, but a task is queued
    pool.resume();
    expect(await queued).toBe('queued');
    expect(await stateOf(drained)).toBe('fulfilled');
  });

  it('pool:drained fires once each time work runs out, never for a pool that had none', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0, paused: true });
    let drained = 0;
    pool.on('pool:drained', () => {
      drained += 1;
    });
    pool.resume();
    pool.setConcurrency(3);
    expect(drained).toBe(0);
    await pool.enqueue(async () => 1);
    await flush();
    expect(drained).toBe(1);
    pool.setConcurrency(2);
    pool.resume();
    await pool.pause();
    pool.resume();
    expect(drained).toBe(1);
  });

  it('stop() on a pool without single-flight rejects its work like any other', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise, { id: 'k' }).catch((e: unknown) => e);
    pool.stop();
    expect(await running).toBeInstanceOf(PoolStoppedError);
    gate.resolve();
  });
});

describe('refusals', () => {
  useFakeTimersInEachTest();

  it('an already aborted signal is refused with a message that says so', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    const error = await pool
      .enqueue(async () => 1, { signal: AbortSignal.abort('gone') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskAbortedError);
    expect((error as Error).message).toBe('task aborted before it was queued');
  });

  it('a paused pool whose breaker is open still refuses new work at once, counting no task', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      timeout: 0,
      retries: 0,
      circuitBreaker: circuitBreaker({ threshold: 1, minimumRequests: 1, timeout: 1_000 }),
    });
    await pool
      .enqueue(async () => {
        throw awsError('SlowDown', 503);
      })
      .catch(() => {});
    expect(pool.circuitState).toBe('open');
    await pool.pause();
    const refused = pool.enqueue(async () => 'x');
    expect(await stateOf(refused)).toBe('rejected');
    await expect(refused).rejects.toBeInstanceOf(CircuitOpenError);
    expect(pool.getStats()).toMatchObject({ queueSize: 0, errorCount: 1 });
  });

  it('a finished attempt leaves no timeout timer behind', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 30_000 });
    const gate = deferred();
    const results = [pool.enqueue(() => gate.promise), pool.enqueue(() => gate.promise, { timeout: 10_000 })];
    await flush();
    expect(vi.getTimerCount()).toBe(1); // one timer for both deadlines
    gate.resolve();
    await Promise.all(results);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a retry starts when its backoff ends, not before', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 1,
      retryDelay: 100,
      jitter: 'none',
      timeout: 0,
    });
    let calls = 0;
    const result = pool.enqueue(async () => {
      calls += 1;
      if (calls === 1) throw awsError('SlowDown', 503);
      return calls;
    });
    await vi.advanceTimersByTimeAsync(99);
    expect(calls).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(await result).toBe(2);
  });
});

describe('fractional concurrency rests', () => {
  useFakeTimersInEachTest();

  it('a task enqueued while the only slot rests waits for the rest to end', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    await vi.advanceTimersByTimeAsync(0);
    const first = pool.enqueue(() => new Promise((resolve) => setTimeout(resolve, 10)));
    await vi.advanceTimersByTimeAsync(10);
    await first;
    const startedAt: number[] = [];
    const second = pool.enqueue(async () => void startedAt.push(Date.now()));
    const restStart = Date.now();
    expect(pool.isQueueFull).toBe(false);
    await flush();
    expect(startedAt).toEqual([]); // resting: 10 ms of work at 0.5 rests 10 ms
    await vi.advanceTimersByTimeAsync(10);
    await second;
    expect(startedAt).toEqual([restStart + 10]);
  });

  it('an attempt that took no time rests no time: the next one starts without a timer', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    const results = [pool.enqueue(() => 1), pool.enqueue(() => 2), pool.enqueue(() => 3)];
    expect(await stateOf(Promise.all(results))).toBe('fulfilled');
    expect(vi.getTimerCount()).toBe(0);
  });
});
