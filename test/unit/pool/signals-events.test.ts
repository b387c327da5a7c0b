import { describe, expect, it, vi } from 'vitest';
import { deduplication, ExecutorPool, TaskTimeoutError } from '../../../lib/pool/index.js';
import { deferred, flush, useFakeTimersInEachTest } from './helpers.js';

describe('caller signal', () => {
  it('rejects a queued task at once and removes it from the queue', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const gate = deferred();
    const blocker = pool.enqueue(() => gate.promise);
    const controller = new AbortController();
    let ran = false;
    const queued = pool.enqueue(
      async () => {
        ran = true;
      },
      { signal: controller.signal },
    );
    expect(pool.getStats().queueSize).toBe(1);
    controller.abort(new Error('caller gave up'));
    await expect(queued).rejects.toMatchObject({ name: 'TaskAbortedError' });
    expect(pool.getStats().queueSize).toBe(0);
    gate.resolve();
    await blocker;
    await pool.drain();
    expect(ran).toBe(false);
  });

  it('aborts a running task’s signal, rejects its caller, and keeps the slot until the work returns', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const stuck = deferred();
    const running = pool.enqueue(
      async (ctx) => {
        seen = ctx.signal;
        await stuck.promise;
      },
      { signal: controller.signal },
    );
    await flush();
    controller.abort();
    await expect(running).rejects.toMatchObject({ name: 'TaskAbortedError' });
    expect(seen?.aborted).toBe(true);
    expect(pool.getStats().activeCount).toBe(1);
    stuck.resolve();
    await pool.drain();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, errorCount: 1, processedCount: 0 });
  });

  it('rejects at once when the signal is already aborted', async () => {
    const pool = new ExecutorPool();
    let ran = false;
    await expect(
      pool.enqueue(
        async () => {
          ran = true;
        },
        { signal: AbortSignal.abort() },
      ),
    ).rejects.toMatchObject({ name: 'TaskAbortedError' });
    expect(ran).toBe(false);
  });

  it('gives each attempt a fresh signal and an id', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 1, retryDelay: 0, timeout: 0 });
    const contexts: { attempt: number; id: string; aborted: boolean }[] = [];
    await pool.enqueue(
      async (ctx) => {
        contexts.push({ attempt: ctx.attempt, id: ctx.id, aborted: ctx.signal.aborted });
        if (ctx.attempt === 1) throw Object.assign(new Error('x'), { code: 'ECONNRESET' });
      },
      { id: 'order-7' },
    );
    expect(contexts).toEqual([
      { attempt: 1, id: 'order-7', aborted: false },
      { attempt: 2, id: 'order-7', aborted: false },
    ]);
    const auto = await pool.enqueue(async (ctx) => ctx.id);
    expect(auto).toMatch(/^\d+$/);
  });
});

describe('events', () => {
  useFakeTimersInEachTest();

  it('reports start, error, retry and completion with attempt numbers and timings', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 1, retryDelay: 10, jitter: 'none', timeout: 0 });
    const events: string[] = [];
    pool.on('pool:taskStarted', (e) => events.push(`started ${e.id}#${e.attempt} active=${e.activeCount}`));
    pool.on('pool:taskError', (e) => events.push(`error ${e.id}#${e.attempt} retry=${e.willRetry}`));
    pool.on('pool:taskRetry', (e) => events.push(`retry ${e.id}#${e.attempt} in ${e.delayMs}`));
    const completed: { queueWaitMs: number; durationMs: number }[] = [];
    pool.on('pool:taskCompleted', (e) => {
      events.push(`completed ${e.id}#${e.attempt}`);
      completed.push({ queueWaitMs: e.queueWaitMs, durationMs: e.durationMs });
    });
    const result = pool.enqueue(
      async (ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        if (ctx.attempt === 1) throw Object.assign(new Error('throttled'), { name: 'SlowDown' });
        return 'ok';
      },
      { id: 't' },
    );
    await vi.advanceTimersByTimeAsync(100);
    expect(await result).toBe('ok');
    expect(events).toEqual([
      'started t#1 active=1',
      'error t#1 retry=true',
      'retry t#1 in 10',
      'started t#2 active=1',
      'completed t#2',
    ]);
    expect(completed[0]!.durationMs).toBeCloseTo(5, 0);
  });

  it('reports a task that enters the queue (not one that starts at once) with the waiting count', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const queued: { id: string; waiting: number }[] = [];
    pool.on('pool:taskQueued', (e) => queued.push(e));
    const gate = deferred();
    const first = pool.enqueue(() => gate.promise, { id: 'a' });
    const second = pool.enqueue(async () => 2, { id: 'b' });
    const third = pool.enqueue(async () => 3, { id: 'c' });
    expect(queued).toEqual([
      { id: 'b', waiting: 1 },
      { id: 'c', waiting: 2 },
    ]);
    gate.resolve();
    await Promise.all([first, second, third]);
    expect(queued).toHaveLength(2);
  });

  it('off() removes a listener', async () => {
    const pool = new ExecutorPool();
    let count = 0;
    const listener = () => {
      count += 1;
    };
    pool.on('pool:taskStarted', listener);
    await pool.enqueue(async () => 1);
    pool.off('pool:taskStarted', listener);
    await pool.enqueue(async () => 2);
    expect(count).toBe(1);
  });
});

describe('unhandled rejections', () => {
  it('never surface from ignored rejected tasks, timeouts, stop() or shared executions', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const pool = new ExecutorPool({
        concurrency: 1,
        retries: 0,
        timeout: 5,
        deduplication: deduplication(),
      });
      const timedOut = new Promise<unknown>((resolve) =>
        pool.on('pool:taskError', ({ error }) => {
          if (error instanceof TaskTimeoutError) resolve(error);
        }),
      );
      // Fire-and-forget callers that never attach a handler:
      pool.enqueue(async () => {
        throw new Error('ignored failure');
      });
      pool.enqueue(() => new Promise(() => {})); // times out; its work never settles
      pool.enqueue(async () => 'x', { dedupKey: 'd' }); // shared, then rejected by stop()
      pool.enqueue(async () => 'x', { dedupKey: 'd' });
      await timedOut;
      pool.stop();
      pool.enqueue(async () => 1); // rejected because stopped
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
      expect(pool.getStats()).toMatchObject({ errorCount: 3, activeCount: 1 });
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
