import { describe, expect, it } from 'vitest';
import { ExecutorPool, PoolStoppedError, TaskAbortedError } from '../../../lib/pool/index.js';
import { type ProcessTarget, processWithPool } from '../../../lib/pool/process.js';
import type { EnqueueOptions, TaskFn } from '../../../lib/pool/task.js';
import { type Deferred, deferred, flush } from './helpers.js';

/** A ProcessTarget that is not a pool: it runs tasks when the test says, and whose queue is full on demand. */
class ManualTarget implements ProcessTarget {
  readonly concurrency = 2;
  readonly maxQueueSize = 4;
  isStopped = false;
  isQueueFull = false;
  readonly pending: { run: () => void; options: EnqueueOptions | undefined }[] = [];
  #room: Deferred<void> | undefined;

  enqueue<T>(fn: TaskFn<T>, options?: EnqueueOptions): Promise<T> {
    const result = deferred<T>();
    const signal = new AbortController().signal;
    this.pending.push({
      run: () =>
        void Promise.resolve(fn({ signal, attempt: 1, id: 'x' })).then(result.resolve, result.reject),
      options,
    });
    return result.promise;
  }

  onQueueRoom(): Promise<void> {
    this.#room = deferred();
    return this.#room.promise;
  }

  makeRoom(): void {
    this.isQueueFull = false;
    this.#room?.resolve();
  }

  runAll(): void {
    for (const task of this.pending.splice(0)) task.run();
  }
}

describe('processWithPool (lib/pool/process.ts) over the ProcessTarget seam', () => {
  it('reads at most concurrency + readAhead items ahead, passing the per-task options to every enqueue', async () => {
    const target = new ManualTarget();
    let read = 0;
    function* items() {
      for (let i = 0; i < 10; i++) {
        read += 1;
        yield i;
      }
    }
    const results: number[] = [];
    const run = processWithPool(target, items(), async (item: number) => item * 10, {
      readAhead: 1,
      priority: 7,
      onResult: (result) => results.push(result),
    });
    await flush();
    expect(read).toBe(3);
    expect(target.pending.map((t) => t.options?.priority)).toEqual([7, 7, 7]);
    while (target.pending.length > 0) {
      target.runAll();
      await flush();
    }
    expect(await run).toEqual({ processed: 10, failed: 0, errors: [] });
    expect(results.sort((a, b) => a - b)).toEqual([0, 10, 20, 30, 40, 50, 60, 70, 80, 90]);
  });

  it('waits for queue room instead of overflowing, and stops reading when the pool stops meanwhile', async () => {
    const target = new ManualTarget();
    target.isQueueFull = true;
    let read = 0;
    const run = processWithPool(
      target,
      (function* () {
        for (;;) {
          read += 1;
          yield read;
        }
      })(),
      async (item: number) => item,
    );
    await flush();
    expect(read).toBe(0);
    target.makeRoom();
    await flush();
    expect(read).toBe(4); // concurrency 2 + readAhead min(2, maxQueueSize 4)
    target.isQueueFull = true;
    target.runAll();
    await flush();
    expect(read).toBe(4);
    target.isStopped = true;
    target.makeRoom();
    await expect(run).rejects.toBeInstanceOf(PoolStoppedError);
    expect(read).toBe(4);
  });

  it('ExecutorPool exposes the seam: isQueueFull and onQueueRoom follow its queue', async () => {
    const pool = new ExecutorPool({ concurrency: 1, maxQueueSize: 1, timeout: 0 });
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise);
    expect(pool.isQueueFull).toBe(false);
    const queued = pool.enqueue(async () => 'queued');
    expect(pool.isQueueFull).toBe(true);
    let roomed = false;
    const room = pool.onQueueRoom().then(() => {
      roomed = true;
    });
    await flush();
    expect(roomed).toBe(false);
    gate.resolve();
    await room;
    expect(pool.isQueueFull).toBe(false);
    expect(await queued).toBe('queued');
    await running;
  });
});

/** An iterator over 0..n-1 that counts `return()` calls (what `for...of` and `process()` use to close it). */
function countingIterable(n: number) {
  const seen = { read: 0, returned: 0 };
  const iterable: Iterable<number> = {
    [Symbol.iterator]: () => ({
      next: () => (seen.read < n ? { value: seen.read++, done: false } : { value: undefined, done: true }),
      return: () => {
        seen.returned += 1;
        return { value: undefined, done: true };
      },
    }),
  };
  return { iterable, seen };
}

describe('processWithPool: how a call ends', () => {
  it('on a stopped pool rejects with PoolStoppedError and leaves the input unread and open', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.stop();
    function* items() {
      yield 'a';
      yield 'b';
    }
    const input = items();
    await expect(processWithPool(pool, input, async (x) => x)).rejects.toBeInstanceOf(PoolStoppedError);
    // The caller can still hand the same input to another pool.
    expect(input.next()).toEqual({ value: 'a', done: false });
  });

  it('waits for items that settle on a timer, without spinning (back-pressure and the final wait)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const done: number[] = [];
    const summary = await processWithPool(
      pool,
      [1, 2, 3],
      (x) => new Promise<number>((resolve) => setTimeout(() => resolve(x), 1)),
      { readAhead: 0, onResult: (x) => done.push(x) },
    );
    expect(summary).toEqual({ processed: 3, failed: 0, errors: [] });
    expect(done).toEqual([1, 2, 3]);
  });

  it('closes an input it stops reading early, and never closes one it read to the end', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const whole = countingIterable(3);
    expect(await processWithPool(pool, whole.iterable, async (x) => x)).toMatchObject({ processed: 3 });
    expect(whole.seen).toEqual({ read: 3, returned: 0 });

    const early = countingIterable(10);
    const summary = await processWithPool(
      pool,
      early.iterable,
      async (x) => {
        throw new Error(`item ${x}`);
      },
      { stopOnError: true, readAhead: 0 },
    );
    expect(summary.failed).toBe(1);
    expect(early.seen).toEqual({ read: 1, returned: 1 });
  });

  it('stops early on an input without return() (an array) without failing', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const items = [1, 2, 3, 4, 5];
    expect(items[Symbol.iterator]().return).toBeUndefined();
    const summary = await processWithPool(
      pool,
      items,
      async () => {
        throw new Error('no');
      },
      { stopOnError: true, readAhead: 0 },
    );
    expect(summary).toMatchObject({ processed: 0, failed: 1 });
  });

  it('a stop or an abort after the input was read to the end resolves with the summary: nothing was left unread', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const gate = deferred();
    const run = processWithPool(pool, [1, 2], () => gate.promise);
    await flush();
    pool.stop();
    const summary = await run;
    expect(summary).toMatchObject({ processed: 0, failed: 2 });
    expect(summary.errors.map((e) => e.error)).toEqual([
      expect.any(PoolStoppedError),
      expect.any(PoolStoppedError),
    ]);

    const other = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const controller = new AbortController();
    const aborted = processWithPool(other, [1, 2], () => new Promise(() => {}), {
      signal: controller.signal,
    });
    await flush();
    controller.abort(new Error('deadline'));
    expect(await aborted).toMatchObject({ processed: 0, failed: 2 });
  });

  it('an abort before the input ends rejects with TaskAbortedError carrying the signal reason', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const controller = new AbortController();
    const reason = new Error('invocation deadline');
    const run = processWithPool(
      pool,
      [1, 2, 3],
      async (x) => {
        if (x === 1) controller.abort(reason);
        return x;
      },
      { signal: controller.signal, readAhead: 0 },
    );
    const error = await run.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TaskAbortedError);
    expect(error).toMatchObject({ message: 'process() aborted', cause: reason });
  });

  it('with stopOnError, a failure then a stop resolves with the summary holding the failure', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const failure = new Error('first item failed');
    const gate = deferred();
    const summary = await processWithPool(
      pool,
      (function* () {
        for (let i = 0; ; i++) yield i;
      })(),
      (x) => (x === 0 ? Promise.reject(failure) : gate.promise),
      { stopOnError: true, onError: () => pool.stop() },
    );
    expect(summary.errors[0]).toEqual({ index: 0, error: failure });
    expect(summary.processed).toBe(0);
  });

  it('with stopOnError but no failure, a stop before the input ends is still PoolStoppedError', async () => {
    const target = new ManualTarget();
    const run = processWithPool(target, [1, 2, 3, 4, 5, 6, 7, 8], async (x: number) => x, {
      stopOnError: true,
      readAhead: 0,
    });
    await flush();
    expect(target.pending).toHaveLength(2);
    target.isStopped = true;
    target.runAll();
    await expect(run).rejects.toBeInstanceOf(PoolStoppedError);
  });

  it('rejects with the very error a callback threw (onResult or onError), the first one only', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const broke = new Error('consumer broke');
    const onResult = processWithPool(pool, [1, 2, 3], async (x) => x, {
      onResult: (x) => {
        throw x === 1 ? broke : new Error('later');
      },
    });
    expect(await onResult.catch((e: unknown) => e)).toBe(broke);

    const sink = new Error('sink broke');
    const onError = processWithPool(
      pool,
      [1, 2],
      async () => {
        throw new Error('item');
      },
      {
        onError: (_e, x) => {
          throw x === 1 ? sink : new Error('later');
        },
      },
    );
    expect(await onError.catch((e: unknown) => e)).toBe(sink);
  });
});
