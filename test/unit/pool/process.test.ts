import { describe, expect, it } from 'vitest';
import { ExecutorPool, PoolStoppedError } from '../../../lib/pool/index.js';
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
