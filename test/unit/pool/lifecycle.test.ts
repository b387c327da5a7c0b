import { describe, expect, it } from 'vitest';
import { ExecutorPool, PoolStoppedError, processWithPool } from '../../../lib/pool/index.js';
import { type Deferred, deferred, flush, stateOf } from './helpers.js';

function gatedTasks(pool: ExecutorPool, n: number) {
  const gates: Deferred<void>[] = [];
  const started: number[] = [];
  const signals: AbortSignal[] = [];
  const results = Array.from({ length: n }, (_, i) => {
    const gate = deferred();
    gates.push(gate);
    return pool.enqueue(async (ctx) => {
      started.push(i);
      signals.push(ctx.signal);
      await gate.promise;
      return i;
    });
  });
  return { gates, started, signals, results };
}

describe('ExecutorPool lifecycle', () => {
  it('pause() stops starting queued tasks and resolves once in-flight work settled; resume() restarts', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    const { gates, started, results } = gatedTasks(pool, 5);
    await flush();
    expect(started).toEqual([0, 1]);
    const paused = pool.pause();
    expect(pool.isPaused).toBe(true);
    expect(await stateOf(paused)).toBe('pending');
    gates[0]!.resolve();
    await flush();
    expect(started).toEqual([0, 1]); // a freed slot starts nothing while paused
    expect(await stateOf(paused)).toBe('pending');
    gates[1]!.resolve();
    await paused;
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 3, processedCount: 2 });
    pool.resume();
    await flush();
    expect(started).toEqual([0, 1, 2, 3]);
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3, 4]);
  });

  it('pause() on an idle pool resolves at once', async () => {
    const pool = new ExecutorPool();
    expect(await stateOf(pool.pause())).toBe('fulfilled');
  });

  it('drain() resolves at once when idle, otherwise when nothing is queued or running, and emits pool:drained', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    const drainedEvents: { processedCount: number; errorCount: number }[] = [];
    pool.on('pool:drained', (payload) => drainedEvents.push(payload));
    expect(await stateOf(pool.drain())).toBe('fulfilled');
    expect(drainedEvents).toHaveLength(1);

    const { gates, results } = gatedTasks(pool, 3);
    const drained = pool.drain();
    gates[0]!.resolve();
    gates[1]!.resolve();
    await flush();
    expect(await stateOf(drained)).toBe('pending');
    gates[2]!.resolve();
    await drained;
    await Promise.all(results);
    expect(drainedEvents).toEqual([
      { processedCount: 0, errorCount: 0 },
      { processedCount: 3, errorCount: 0 },
    ]);
    expect(pool.getStats()).toMatchObject({ queueSize: 0, activeCount: 0 });
  });

  it('emits pool:drained when work runs out even without a drain() call', async () => {
    const pool = new ExecutorPool({ concurrency: 2 });
    let drained = 0;
    pool.on('pool:drained', () => {
      drained += 1;
    });
    await Promise.all([pool.enqueue(async () => 1), pool.enqueue(async () => 2)]);
    await flush();
    expect(drained).toBe(1);
  });

  it('stop() rejects queued tasks, aborts in-flight signals, and rejects later enqueues', async () => {
    const pool = new ExecutorPool({ concurrency: 2, timeout: 0 });
    const { gates, started, signals, results } = gatedTasks(pool, 5);
    const outcomes = results.map((r) => r.catch((e: unknown) => e));
    await flush();
    pool.stop();
    expect(pool.isStopped).toBe(true);
    expect(signals).toHaveLength(2);
    expect(signals.every((s) => s.aborted && s.reason instanceof PoolStoppedError)).toBe(true);
    const settled = await Promise.all(outcomes);
    expect(settled.every((e) => e instanceof PoolStoppedError)).toBe(true);
    expect(started).toEqual([0, 1]);
    // In-flight work still holds its slots until it returns.
    expect(pool.getStats().activeCount).toBe(2);
    await expect(pool.enqueue(async () => 'late')).rejects.toBeInstanceOf(PoolStoppedError);
    await expect(processWithPool(pool, [1, 2], async (x) => x)).rejects.toBeInstanceOf(PoolStoppedError);
    const drained = pool.drain();
    for (const gate of gates) gate.resolve();
    await drained;
    expect(pool.getStats().activeCount).toBe(0);
    pool.resume();
    expect(pool.isPaused).toBe(true);
  });

  it('stop() rejects tasks waiting out a retry backoff', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 3, retryDelay: 60_000, timeout: 0 });
    let calls = 0;
    const outcome = pool
      .enqueue(async () => {
        calls += 1;
        throw Object.assign(new Error('throttled'), { name: 'SlowDown' });
      })
      .catch((e: unknown) => e);
    await flush();
    expect(calls).toBe(1);
    pool.stop();
    expect(await outcome).toBeInstanceOf(PoolStoppedError);
    expect(await stateOf(pool.drain())).toBe('fulfilled');
  });
});
