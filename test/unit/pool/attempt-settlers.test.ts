// The scheduler reuses its fulfil/reject callbacks across attempts (attempt-settlers.ts). Task code whose
// promise misbehaves must not be able to settle an attempt twice, settle someone else's attempt, or leak a slot.
import { describe, expect, it } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { deferred, flush } from './helpers.js';

/** A Promise subclass whose `then` passes every outcome on twice, then forges a rejection (a buggy library). */
class ChattyPromise<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: the misbehaving `then` is the point of the test.
  override then<A = T, B = never>(
    onFulfilled?: ((value: T) => A | PromiseLike<A>) | null,
    onRejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): Promise<A | B> {
    const twice =
      <V>(callback: ((v: V) => unknown) | null | undefined) =>
      (v: V) => {
        callback?.(v);
        callback?.(v);
        onRejected?.(new Error('forged'));
      };
    return super.then(twice(onFulfilled), twice(onRejected)) as Promise<A | B>;
  }
}

/** A Promise subclass whose `then` throws. */
class ThrowingThenPromise<T> extends Promise<T> {
  // biome-ignore lint/suspicious/noThenProperty: the misbehaving `then` is the point of the test.
  override then(): never {
    throw new Error('then threw');
  }
}

describe('attempt settlement', () => {
  it('settles each attempt once, with its own outcome, when the work calls back more than once', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0 });
    const gates = [deferred<string>(), deferred<string>(), deferred<string>()];
    const results = gates.map((gate) =>
      pool.enqueue(
        () =>
          new ChattyPromise<string>((resolve, reject) => {
            gate.promise.then(resolve, reject);
          }),
      ),
    );
    await flush();
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 1, processedCount: 0, errorCount: 0 });
    gates[1]!.resolve('one');
    await expect(results[1]).resolves.toBe('one');
    await flush();
    // The extra calls settled nothing else: one slot freed, the third task took it.
    expect(pool.getStats()).toMatchObject({ activeCount: 2, queueSize: 0, processedCount: 1, errorCount: 0 });
    gates[0]!.reject(new Error('zero failed'));
    gates[2]!.resolve('two');
    await expect(results[0]).rejects.toMatchObject({ name: 'Error', message: 'zero failed' });
    await expect(results[2]).resolves.toBe('two');
    await pool.drain();
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0, processedCount: 2, errorCount: 1 });
  });

  it('fails the task, and frees its slot, when the work returns a promise whose then throws', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
    const broken = pool.enqueue(() => new ThrowingThenPromise<number>(() => {}));
    const next = pool.enqueue(() => 'next');
    await expect(broken).rejects.toMatchObject({ name: 'Error', message: 'then threw' });
    await expect(next).resolves.toBe('next');
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 1, errorCount: 1 });
  });

  it('ignores an own `then` on a native promise, as await does', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
    const work = (value: number) => {
      const promise = Promise.resolve(value);
      Object.defineProperty(promise, 'then', {
        value: (onFulfilled: (v: number) => void, onRejected: (e: unknown) => void) => {
          onFulfilled(-1);
          onRejected(new Error('forged'));
        },
      });
      return promise;
    };
    const results = [pool.enqueue(() => work(1)), pool.enqueue(() => work(2))];
    expect(await Promise.all(results)).toEqual([1, 2]);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 2, errorCount: 0 });
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
