// The scheduler reuses its fulfil/reject callbacks across attempts (attempt-settlers.ts). A task function
// whose promise misbehaves must not be able to settle an attempt twice, or settle someone else's attempt.
import { describe, expect, it } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { deferred, flush } from './helpers.js';

/** A Promise subclass whose `then` also calls both callbacks itself, twice (a buggy thenable library). */
class ChattyPromise<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: the misbehaving `then` is the point of the test.
  override then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    for (let i = 0; i < 2; i++) {
      onFulfilled?.('forged' as T);
      onRejected?.(new Error('forged'));
    }
    return super.then(onFulfilled, onRejected);
  }
}

describe('attempt settlement', () => {
  it("settles each attempt once, with its own work's outcome, even when the work's promise calls back more than once", async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0 });
    const gates = [deferred<string>(), deferred<string>(), deferred<string>()];
    const results = gates.map((gate, i) =>
      pool.enqueue(
        () =>
          new ChattyPromise<string>((resolve, reject) => {
            gate.promise.then(resolve, reject);
          }),
        { id: `t${i}` },
      ),
    );
    await flush();
    // Nothing settled yet: the forged calls were not taken for outcomes, and the cap still holds.
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 1, processedCount: 0, errorCount: 0 });
    gates[1]!.resolve('one');
    await expect(results[1]).resolves.toBe('one');
    await flush();
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 0, processedCount: 1 });
    gates[0]!.reject(new Error('zero failed'));
    gates[2]!.resolve('two');
    await expect(results[0]).rejects.toThrow('zero failed');
    await expect(results[2]).resolves.toBe('two');
    await pool.drain();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0, processedCount: 2, errorCount: 1 });
  });

  it('hands every caller its own result while callbacks are reused across thousands of attempts', async () => {
    const pool = new ExecutorPool({ concurrency: 7, retries: 1, retryDelay: 0 });
    const failedOnce = new Set<number>();
    const results = Array.from({ length: 3000 }, (_, i) =>
      pool.enqueue(
        async () => {
          // Uneven settling order: some settle in the same tick, some a few ticks later, some fail once.
          for (let hop = 0; hop < i % 4; hop++) await Promise.resolve();
          if (i % 5 === 0 && !failedOnce.has(i)) {
            failedOnce.add(i);
            throw Object.assign(new Error('transient'), { name: 'SlowDown' });
          }
          return i;
        },
        { priority: i % 3 },
      ),
    );
    expect(await Promise.all(results)).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 3000, retryCount: 600 });
  });
});
