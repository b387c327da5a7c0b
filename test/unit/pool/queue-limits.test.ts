import { describe, expect, it } from 'vitest';
import { ConcurrencyBudget, ExecutorPool, processWithPool, QueueFullError } from '../../../lib/pool/index.js';
import { deferred, flush, stateOf } from './helpers.js';

describe('maxQueueSize', () => {
  it('rejects enqueue beyond the limit at once with QueueFullError, losing nothing already queued', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 2, timeout: 0 });
    const gate = deferred();
    const running = pool.enqueue(async () => {
      await gate.promise;
      return 'running';
    });
    const queued = [pool.enqueue(async () => 'q1'), pool.enqueue(async () => 'q2')];
    let called = false;
    const refused = pool.enqueue(async () => {
      called = true;
    });
    await expect(refused).rejects.toBeInstanceOf(QueueFullError);
    await expect(refused).rejects.toMatchObject({ name: 'QueueFullError', maxQueueSize: 2 });
    expect(pool.getStats().queueSize).toBe(2);
    gate.resolve();
    expect(await Promise.all([running, ...queued])).toEqual(['running', 'q1', 'q2']);
    expect(called).toBe(false);
    // Room again once the queue drained.
    expect(await pool.enqueue(async () => 'again')).toBe('again');
  });
});

describe('process()', () => {
  it('reads no more than concurrency + maxQueueSize items ahead of completion', async () => {
    const concurrency = 3;
    const maxQueueSize = 2;
    const pool = new ExecutorPool({ concurrency, maxQueueSize, timeout: 0 });
    let read = 0;
    let completed = 0;
    let maxAhead = 0;
    function* items() {
      for (let i = 0; i < 50; i++) {
        read += 1;
        maxAhead = Math.max(maxAhead, read - completed);
        yield i;
      }
    }
    const seen: number[] = [];
    const summary = await processWithPool(
      pool,
      items(),
      async (item) => {
        await flush(Math.floor(Math.random() * 5));
        completed += 1;
        return item * 2;
      },
      { onResult: (result) => seen.push(result) },
    );
    expect(summary).toEqual({ processed: 50, failed: 0, errors: [] });
    expect(maxAhead).toBeLessThanOrEqual(concurrency + maxQueueSize);
    expect(maxAhead).toBeGreaterThan(concurrency); // it does read ahead, it is not one at a time
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i * 2));
  });

  it('pulls from an async iterable only when there is room, and reports failures without throwing', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    let read = 0;
    let unfinished = 0;
    let maxUnfinished = 0;
    async function* items() {
      for (let i = 0; i < 20; i++) {
        read += 1;
        unfinished += 1;
        maxUnfinished = Math.max(maxUnfinished, unfinished);
        yield i;
      }
    }
    const failures: number[] = [];
    const summary = await processWithPool(
      pool,
      items(),
      async (item) => {
        await flush(2);
        unfinished -= 1;
        if (item % 5 === 0) throw new Error(`bad ${item}`);
        return item;
      },
      { onError: (_error, item) => failures.push(item), readAhead: 1, keepErrors: 2 },
    );
    expect(read).toBe(20);
    expect(maxUnfinished).toBeLessThanOrEqual(3);
    expect(summary.processed).toBe(16);
    expect(summary.failed).toBe(4);
    expect(summary.errors.map((e) => e.index)).toEqual([0, 5]);
    expect(failures.sort((a, b) => a - b)).toEqual([0, 5, 10, 15]);
  });

  it('stops reading after the first failure with stopOnError, and closes the iterator', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    let closed = false;
    let read = 0;
    function* items() {
      try {
        for (let i = 0; i < 100; i++) {
          read += 1;
          yield i;
        }
      } finally {
        closed = true;
      }
    }
    const summary = await processWithPool(
      pool,
      items(),
      async (item) => {
        if (item === 2) throw new Error('boom');
        return item;
      },
      { stopOnError: true, readAhead: 0 },
    );
    expect(summary.failed).toBe(1);
    expect(read).toBeLessThan(5);
    expect(closed).toBe(true);
  });

  it('rejects with TaskAbortedError when its signal aborts, aborting running items and dropping queued ones', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    const controller = new AbortController();
    let started = 0;
    const run = processWithPool(
      pool,
      (function* () {
        for (let i = 0; i < 1000; i++) yield i;
      })(),
      async (item, ctx) => {
        started += 1;
        if (item === 1) controller.abort();
        if (!ctx.signal.aborted)
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve));
      },
      { signal: controller.signal },
    );
    await expect(run).rejects.toMatchObject({ name: 'TaskAbortedError' });
    expect(started).toBe(2);
    await pool.drain();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0 });
  });

  it('rethrows an error thrown by onResult after in-flight items settle', async () => {
    const pool = new ExecutorPool({ concurrency: 2 });
    await expect(
      processWithPool(pool, [1, 2, 3], async (x) => x, {
        onResult: (r) => {
          if (r === 2) throw new Error('consumer broke');
        },
      }),
    ).rejects.toMatchObject({ name: 'Error', message: 'consumer broke' });
    expect(pool.getStats().activeCount).toBe(0);
  });
});

describe('isQueueFull and onQueueRoom', () => {
  it('with maxQueueSize 0, a free slot is room: a waiting producer wakes when the running task settles', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 0, timeout: 0 });
    expect(pool.isQueueFull).toBe(false);
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise);
    expect(pool.isQueueFull).toBe(true);
    await expect(pool.enqueue(async () => 'refused')).rejects.toBeInstanceOf(QueueFullError);
    const room = pool.onQueueRoom();
    expect(await stateOf(room)).toBe('pending');
    gate.resolve();
    await running;
    expect(await stateOf(room)).toBe('fulfilled');
    expect(pool.isQueueFull).toBe(false);
    expect(await pool.enqueue(async () => 'fits')).toBe('fits');
  });

  it('with a budget, the queue is full while another pool holds the budget, and room comes when it frees', async () => {
    const budget = new ConcurrencyBudget(1);
    const other = new ExecutorPool({ concurrency: 1, timeout: 0, budget });
    const pool = new ExecutorPool({ concurrency: 2, maxQueueSize: 0, timeout: 0, budget });
    expect(pool.isQueueFull).toBe(false);
    const gate = deferred();
    const held = other.enqueue(() => gate.promise);
    await flush();
    expect(budget.available).toBe(0);
    // The pool has free slots of its own, but the budget grants none: enqueue refuses, and says so first.
    expect(pool.isQueueFull).toBe(true);
    await expect(pool.enqueue(async () => 'refused')).rejects.toBeInstanceOf(QueueFullError);
    const room = pool.onQueueRoom();
    const summary = processWithPool(pool, [1, 2, 3], async (x) => x);
    expect(await stateOf(room)).toBe('pending');
    gate.resolve();
    await held;
    expect(await stateOf(room)).toBe('fulfilled');
    expect(await summary).toMatchObject({ processed: 3, failed: 0 });
    expect(budget.inUse).toBe(0);
  });

  it('a paused pool with maxQueueSize 0 is full even with free slots; resume() makes room', async () => {
    const pool = new ExecutorPool({ concurrency: 2, maxQueueSize: 0, timeout: 0, paused: true });
    expect(pool.isQueueFull).toBe(true);
    await expect(pool.enqueue(async () => 'refused')).rejects.toBeInstanceOf(QueueFullError);
    const room = pool.onQueueRoom();
    expect(await stateOf(room)).toBe('pending');
    pool.resume();
    expect(await stateOf(room)).toBe('fulfilled');
    expect(await pool.enqueue(async () => 'fits')).toBe('fits');
  });

  it('with maxQueueSize N, the queue is full at N queued tasks behind busy slots, not at N - 1', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 2, timeout: 0 });
    const gate = deferred();
    const tasks = [pool.enqueue(() => gate.promise), pool.enqueue(async () => 'q1')];
    expect(pool.isQueueFull).toBe(false);
    tasks.push(pool.enqueue(async () => 'q2'));
    expect(pool.isQueueFull).toBe(true);
    const room = pool.onQueueRoom();
    expect(await stateOf(room)).toBe('pending');
    gate.resolve();
    expect(await stateOf(room)).toBe('fulfilled');
    await Promise.all(tasks);
    expect(pool.isQueueFull).toBe(false);
  });
});
