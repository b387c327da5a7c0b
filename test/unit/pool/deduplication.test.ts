import { describe, expect, it, vi } from 'vitest';
import { deduplication, ExecutorPool } from '../../../lib/pool/index.js';
import { deferred, flush } from './helpers.js';

describe('deduplication', () => {
  it('shares one execution among identical dedupKeys while it is pending', async () => {
    const pool = new ExecutorPool({ concurrency: 4, deduplication: deduplication() });
    const gate = deferred<string>();
    let calls = 0;
    const fn = async () => {
      calls += 1;
      return gate.promise;
    };
    const a = pool.enqueue(fn, { dedupKey: 'k' });
    const b = pool.enqueue(fn, { dedupKey: 'k' });
    const c = pool.enqueue(fn, { dedupKey: 'other' });
    await flush();
    expect(calls).toBe(2);
    gate.resolve('value');
    expect(await Promise.all([a, b, c])).toEqual(['value', 'value', 'value']);
    expect(pool.getStats().processedCount).toBe(2);
    // Settled: the same key runs again.
    await pool.enqueue(fn, { dedupKey: 'k' });
    expect(calls).toBe(3);
  });

  it('shares a failure with every caller, without unhandled rejections', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, deduplication: deduplication() });
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      let calls = 0;
      const fn = async () => {
        calls += 1;
        throw new Error('shared failure');
      };
      const first = pool.enqueue(fn, { dedupKey: 'x' });
      const second = pool.enqueue(fn, { dedupKey: 'x', signal: new AbortController().signal });
      pool.enqueue(fn, { dedupKey: 'x' }); // nobody awaits this one
      await expect(first).rejects.toMatchObject({ name: 'Error', message: 'shared failure' });
      await expect(second).rejects.toMatchObject({ name: 'Error', message: 'shared failure' });
      expect(calls).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('lets a follower leave via its own signal without cancelling the shared execution', async () => {
    const pool = new ExecutorPool({ concurrency: 1, deduplication: deduplication() });
    const gate = deferred<string>();
    const leader = pool.enqueue(() => gate.promise, { dedupKey: 'k' });
    const controller = new AbortController();
    const follower = pool.enqueue(() => gate.promise, { dedupKey: 'k', signal: controller.signal });
    controller.abort();
    await expect(follower).rejects.toMatchObject({ name: 'TaskAbortedError' });
    gate.resolve('still done');
    expect(await leader).toBe('still done');
  });

  it('derives keys with keyFn', async () => {
    const keyed = new ExecutorPool({
      concurrency: 2,
      deduplication: deduplication({ keyFn: ({ options }) => (options.id ? `id:${options.id}` : undefined) }),
    });
    const gate = deferred<number>();
    let calls = 0;
    const fn = async () => {
      calls += 1;
      return gate.promise;
    };
    const both = [keyed.enqueue(fn, { id: 'same' }), keyed.enqueue(fn, { id: 'same' })];
    await flush();
    expect(calls).toBe(1);
    gate.resolve(7);
    expect(await Promise.all(both)).toEqual([7, 7]);
  });

  it('refuses a dedupKey with a TypeError on a pool without deduplication, running nothing', async () => {
    const plain = new ExecutorPool({ concurrency: 2 });
    let calls = 0;
    const refused = plain.enqueue(async () => (calls += 1), { dedupKey: 'k' });
    await expect(refused).rejects.toMatchObject({
      name: 'TypeError',
      message: expect.stringContaining('deduplication: deduplication()'),
    });
    expect(calls).toBe(0);
    expect(plain.getStats()).toMatchObject({ queueSize: 0, activeCount: 0, errorCount: 0 });
  });
});

describe('deduplication ttl', () => {
  it('stops joining a pending execution once it is older than `ttl`', async () => {
    vi.useFakeTimers();
    try {
      const pool = new ExecutorPool({
        concurrency: 2,
        timeout: 0,
        deduplication: deduplication({ ttl: 1_000 }),
      });
      let calls = 0;
      const fn = () => {
        calls += 1;
        return new Promise<number>((resolve) => setTimeout(() => resolve(calls), 5_000));
      };
      const first = pool.enqueue(fn, { dedupKey: 'k' });
      await vi.advanceTimersByTimeAsync(999);
      const joined = pool.enqueue(fn, { dedupKey: 'k' });
      await vi.advanceTimersByTimeAsync(1);
      const fresh = pool.enqueue(fn, { dedupKey: 'k' });
      expect(joined).toBe(first);
      expect(calls).toBe(2);
      await vi.advanceTimersByTimeAsync(10_000);
      expect(await Promise.all([first, joined, fresh])).toEqual([2, 2, 2]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('enqueue input validation', () => {
  it('rejects bad options with a RangeError naming the field, and queues nothing', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    await expect(pool.enqueue(async () => 1, { priority: Number.NaN })).rejects.toMatchObject({
      name: 'RangeError',
      message: expect.stringMatching(/priority/),
    });
    await expect(pool.enqueue(async () => 1, { timeout: -1 })).rejects.toMatchObject({
      name: 'RangeError',
      message: expect.stringMatching(/timeout/),
    });
    await expect(pool.enqueue(async () => 1, { retries: -2 })).rejects.toBeInstanceOf(RangeError);
    expect(pool.getStats()).toMatchObject({ queueSize: 0, activeCount: 0, processedCount: 0 });
    expect(() => new ExecutorPool({ jitter: 'sometimes' as never })).toThrow(/jitter/);
    expect(() => new ExecutorPool({ timeout: -5 })).toThrow(/timeout/);
  });
});
