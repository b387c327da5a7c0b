// ExecutorPool.enqueue at its edges: option boundaries, what a task function may return or throw, a paused
// or stopped pool, and a caller signal that aborts while an attempt is failing.
import { describe, expect, it } from 'vitest';
import {
  ExecutorPool,
  PoolStoppedError,
  processWithPool,
  TaskAbortedError,
} from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf } from './helpers.js';

describe('enqueue options at their bounds', () => {
  it('a finite priority, timeout 0 and retries 0 are valid; infinite priority and NaN timeout/retries are not', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    await expect(pool.enqueue(async () => 'ok', { priority: -1e9, timeout: 0, retries: 0 })).resolves.toBe(
      'ok',
    );
    await expect(pool.enqueue(async () => 1, { priority: Number.POSITIVE_INFINITY })).rejects.toMatchObject({
      name: 'RangeError',
      message: 'priority must be a finite number, got Infinity',
    });
    await expect(pool.enqueue(async () => 1, { timeout: Number.NaN })).rejects.toMatchObject({
      name: 'RangeError',
      message: 'timeout must be a number >= 0, got NaN',
    });
    await expect(pool.enqueue(async () => 1, { retries: Number.NaN })).rejects.toMatchObject({
      name: 'RangeError',
      message: 'retries must be a number >= 0, got NaN',
    });
    await expect(pool.enqueue(async () => 1, { retries: -1 })).rejects.toBeInstanceOf(RangeError);
    expect(pool.getStats()).toMatchObject({ processedCount: 1, errorCount: 0 });
  });

  it('without deduplication, a task with its own options (a timeout) runs and resolves', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    await expect(pool.enqueue(async () => 'ok', { timeout: 1_000, id: 'a' })).resolves.toBe('ok');
    expect(pool.getStats()).toMatchObject({ processedCount: 1, errorCount: 0 });
    pool.stop();
  });

  it('an already aborted signal rejects with TaskAbortedError whose cause is the reason, running nothing', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    const reason = new Error('gone');
    let ran = false;
    const err = await pool
      .enqueue(
        async () => {
          ran = true;
        },
        { signal: AbortSignal.abort(reason) },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskAbortedError);
    expect((err as TaskAbortedError).cause).toBe(reason);
    expect(ran).toBe(false);
  });
});

describe('what a task function may do', () => {
  it('a synchronous throw rejects the caller and frees the slot; a plain value resolves it', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const boom = new TypeError('bad input');
    await expect(
      pool.enqueue(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await pool.enqueue(() => 7)).toBe(7);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 1, errorCount: 1 });
  });

  it('a caller that aborts while its attempt fails with a retryable error is not retried', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 5, retryDelay: 0, timeout: 0 });
    const controller = new AbortController();
    const gate = deferred();
    let attempts = 0;
    const outcome = pool
      .enqueue(
        async () => {
          attempts += 1;
          await gate.promise;
          throw awsError('SlowDown', 503);
        },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    await flush();
    controller.abort(new Error('cutoff'));
    gate.resolve();
    expect(await outcome).toBeInstanceOf(TaskAbortedError);
    await pool.drain();
    expect(attempts).toBe(1);
    expect(pool.getStats().retryCount).toBe(0);
  });
});

describe('paused and stopped pools', () => {
  it('a paused pool starts nothing, not even into a free slot with an empty queue, until resumed', async () => {
    const pool = new ExecutorPool({ concurrency: 2, paused: true });
    let ran = false;
    const result = pool.enqueue(async () => {
      ran = true;
      return 'done';
    });
    await flush();
    expect(ran).toBe(false);
    expect(pool.getStats().queueSize).toBe(1);
    pool.resume();
    expect(await result).toBe('done');
  });

  it('resume() after stop() starts nothing; onQueueRoom() waiters wake at stop()', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 1, timeout: 0 });
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise);
    const queued = pool.enqueue(async () => 'queued').catch((e: unknown) => e);
    expect(pool.isQueueFull).toBe(true);
    const room = pool.onQueueRoom();
    expect(await stateOf(room)).toBe('pending');
    pool.stop();
    expect(await stateOf(room)).toBe('fulfilled');
    expect(await queued).toBeInstanceOf(PoolStoppedError);
    pool.resume();
    expect(pool.isPaused).toBe(true);
    expect(pool.isStopped).toBe(true);
    await expect(running).rejects.toBeInstanceOf(PoolStoppedError);
    gate.resolve();
    await expect(pool.onQueueRoom()).resolves.toBeUndefined();
  });
});

describe('process() callbacks that throw', () => {
  it('an onError that throws stops reading and rejects process() with the first callback error', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    let read = 0;
    function* items() {
      for (let i = 0; i < 100; i++) {
        read += 1;
        yield i;
      }
    }
    const run = processWithPool(
      pool,
      items(),
      async (i) => {
        throw new Error(`item ${i} failed`);
      },
      {
        readAhead: 0,
        onError: (error) => {
          throw new Error(`sink broke on ${(error as Error).message}`);
        },
      },
    );
    await expect(run).rejects.toMatchObject({ name: 'Error', message: 'sink broke on item 0 failed' });
    expect(read).toBeLessThan(5);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0 });
  });
});
