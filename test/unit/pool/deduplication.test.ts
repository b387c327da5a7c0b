import { describe, expect, it } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { deferred, flush } from './helpers.js';

describe('deduplication', () => {
  it('shares one execution among identical dedupKeys while it is pending', async () => {
    const pool = new ExecutorPool({ concurrency: 4 });
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
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
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
      await expect(first).rejects.toThrow('shared failure');
      await expect(second).rejects.toThrow('shared failure');
      expect(calls).toBe(1);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('lets a follower leave via its own signal without cancelling the shared execution', async () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    const gate = deferred<string>();
    const leader = pool.enqueue(() => gate.promise, { dedupKey: 'k' });
    const controller = new AbortController();
    const follower = pool.enqueue(() => gate.promise, { dedupKey: 'k', signal: controller.signal });
    controller.abort();
    await expect(follower).rejects.toMatchObject({ name: 'AbortError' });
    gate.resolve('still done');
    expect(await leader).toBe('still done');
  });

  it('derives keys with keyFn, and ignores keys when disabled', async () => {
    const keyed = new ExecutorPool({
      concurrency: 2,
      deduplication: { keyFn: ({ options }) => (options.id ? `id:${options.id}` : undefined) },
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

    const plain = new ExecutorPool({ concurrency: 2, deduplication: { enabled: false } });
    calls = 0;
    await Promise.all([plain.enqueue(fn, { dedupKey: 'k' }), plain.enqueue(fn, { dedupKey: 'k' })]);
    expect(calls).toBe(2);
  });
});
