import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ExecutorPool, TaskAbortedError } from '../../../lib/pool/index.js';
import { deferred, flush, stateOf } from './helpers.js';

const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;

describe('tasks sharing one caller signal (an invocation deadline)', () => {
  it('an abort rejects every task at once; a running one frees its slot only when its work settles', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    const deadline = new AbortController();
    const work = [deferred(), deferred()];
    const seen: AbortSignal[] = [];
    let queuedRan = false;
    const running = work.map((gate) =>
      pool.enqueue(
        async (ctx) => {
          seen.push(ctx.signal);
          await gate.promise;
        },
        { signal: deadline.signal },
      ),
    );
    const queued = pool.enqueue(
      async () => {
        queuedRan = true;
      },
      { signal: deadline.signal },
    );
    await flush();
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 1 });
    const reason = new Error('deadline');
    deadline.abort(reason);
    for (const task of [...running, queued]) {
      await expect(task).rejects.toBeInstanceOf(TaskAbortedError);
      await expect(task).rejects.toMatchObject({ cause: reason });
    }
    expect(seen.map((s) => s.aborted)).toEqual([true, true]);
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 0 });
    work[0]!.resolve();
    await flush();
    expect(pool.getStats().activeCount).toBe(1);
    const next = pool.enqueue(async () => 'runs in the freed slot');
    expect(await next).toBe('runs in the freed slot');
    work[1]!.resolve();
    await pool.drain();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, errorCount: 3 });
    expect(queuedRan).toBe(false);
  });

  it('a task that finished leaves no listener behind, while its siblings keep the one listener', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const signal = new AbortController().signal;
    const gate = deferred<string>();
    const first = pool.enqueue(() => gate.promise, { signal });
    const second = pool.enqueue(async () => 'second', { signal });
    expect(listeners(signal)).toBe(1);
    gate.resolve('first');
    expect(await first).toBe('first');
    expect(await stateOf(second)).toBe('fulfilled');
    expect(listeners(signal)).toBe(0);
    // Failures and retries leave nothing either.
    const failing = pool.enqueue(
      async () => {
        throw new Error('permanent');
      },
      { signal },
    );
    await expect(failing).rejects.toMatchObject({ name: 'Error', message: 'permanent' });
    expect(listeners(signal)).toBe(0);
  });

  it('10,000 tasks on one signal hold at most one listener, and none once they are done', async () => {
    const pool = new ExecutorPool({ concurrency: 100, timeout: 30_000, retries: 3 });
    const signal = new AbortController().signal;
    let peak = 0;
    const tasks = Array.from({ length: 10_000 }, (_, i) =>
      pool.enqueue(
        async () => {
          peak = Math.max(peak, listeners(signal));
          await Promise.resolve();
          return i;
        },
        { signal, priority: i % 10 },
      ),
    );
    expect(listeners(signal)).toBe(1);
    const results = await Promise.all(tasks);
    expect(results).toHaveLength(10_000);
    expect(peak).toBe(1);
    expect(listeners(signal)).toBe(0);
  });

  it('after an abort, later tasks with the aborted signal reject before queueing and add no listener', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const controller = new AbortController();
    const gate = deferred();
    const running = pool.enqueue(() => gate.promise, { signal: controller.signal });
    await flush();
    controller.abort();
    await expect(running).rejects.toBeInstanceOf(TaskAbortedError);
    await expect(pool.enqueue(async () => 1, { signal: controller.signal })).rejects.toBeInstanceOf(
      TaskAbortedError,
    );
    expect(listeners(controller.signal)).toBe(0);
    gate.resolve();
    await pool.drain();
  });
});
