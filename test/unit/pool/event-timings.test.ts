// What the pool's events and metrics say about time: queue wait until an attempt starts (a retry's is counted
// from the end of its backoff), each attempt's duration (a timed-out one's up to its deadline).
import { describe, expect, it, vi } from 'vitest';
import { ExecutorPool, TaskTimeoutError } from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('event timings', () => {
  useFakeTimersInEachTest();

  it('queue wait runs from enqueue (or the end of a backoff) to the start; duration from start to settle', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 1, retryDelay: 50, jitter: 'none', timeout: 0 });
    const started: string[] = [];
    const completed: string[] = [];
    const errors: string[] = [];
    pool.on('pool:taskStarted', (e) => started.push(`${e.id}#${e.attempt} waited ${e.queueWaitMs}`));
    pool.on('pool:taskCompleted', (e) =>
      completed.push(`${e.id}#${e.attempt} waited ${e.queueWaitMs} took ${e.durationMs}`),
    );
    pool.on('pool:taskError', (e) =>
      errors.push(`${e.id}#${e.attempt} ${(e.error as Error).name} took ${e.durationMs}`),
    );
    const first = pool.enqueue(() => sleep(30).then(() => 'first'), { id: 'first' });
    const second = pool.enqueue(
      async (ctx) => {
        await sleep(20);
        if (ctx.attempt === 1) throw awsError('SlowDown', 503);
        return 'second';
      },
      { id: 'second' },
    );
    await vi.advanceTimersByTimeAsync(200);
    expect([await first, await second]).toEqual(['first', 'second']);
    expect(started).toEqual(['first#1 waited 0', 'second#1 waited 30', 'second#2 waited 0']);
    expect(errors).toEqual(['second#1 SlowDown took 20']);
    expect(completed).toEqual(['first#1 waited 0 took 30', 'second#2 waited 0 took 20']);
    const { queueWait, execution } = pool.getDetailedMetrics();
    expect(queueWait.max).toBeCloseTo(30, 0);
    expect(execution.max).toBeCloseTo(30, 0);
  });

  it('a timed-out attempt reports its timeout error and a duration of its timeout, while its work runs on', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 40 });
    const errors: { error: unknown; durationMs: number; willRetry: boolean }[] = [];
    pool.on('pool:taskError', ({ error, durationMs, willRetry }) =>
      errors.push({ error, durationMs, willRetry }),
    );
    await vi.advanceTimersByTimeAsync(1_000); // the attempt starts at a time other than 0
    const work = deferred();
    const outcome = pool.enqueue(() => work.promise).catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(40);
    const error = await outcome;
    expect(error).toBeInstanceOf(TaskTimeoutError);
    expect(errors).toEqual([{ error, durationMs: 40, willRetry: false }]);
    expect(pool.getStats().activeCount).toBe(1);
    work.resolve();
    await flush();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, errorCount: 1, processedCount: 0 });
  });
});

describe('retries without a delay', () => {
  useFakeTimersInEachTest();

  it('with retryDelay 0 a retry re-enters the queue at once, without waiting for a timer', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 2, retryDelay: 0, jitter: 'none', timeout: 0 });
    let calls = 0;
    const result = pool.enqueue(async () => {
      calls += 1;
      if (calls < 3) throw awsError('SlowDown', 503);
      return calls;
    });
    expect(await stateOf(result)).toBe('fulfilled'); // no timer advanced
    expect(await result).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
    expect(pool.getStats()).toMatchObject({ retryCount: 2, processedCount: 1, errorCount: 0 });
  });
});

describe('pool state without the optional parts', () => {
  it('a pool without a breaker reports it closed; a stopped pool with maxQueueSize 0 has room for nobody to wait on', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 0, timeout: 0 });
    expect(pool.circuitState).toBe('closed');
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise).catch((e: unknown) => e);
    expect(pool.isQueueFull).toBe(true);
    pool.stop();
    // Every enqueue now rejects with PoolStoppedError at once: a producer must not wait for room.
    expect(await stateOf(pool.onQueueRoom())).toBe('fulfilled');
    gate.resolve();
    expect(await running).toMatchObject({ name: 'PoolStoppedError' });
  });
});
