// The scheduler reuses its records of attempts in flight, with their fulfil/reject callbacks, across attempts
// (attempt-runner.ts). Task code whose promise misbehaves must not be able to settle an attempt twice, settle
// someone else's attempt, or leak a slot; a context a task function keeps is its own; a free record keeps
// no caller's task alive.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { ExecutorPool, type TaskContext } from '../../../lib/pool/index.js';
import { deferred, flush, stateOf } from './helpers.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/**
 * Enqueues `count` tasks, each function the only holder of an object, and returns weak references to those
 * objects. Made outside the test's async function, whose suspended frame could keep the last one.
 */
function enqueueHoldingTasks(
  pool: ExecutorPool,
  count: number,
): { refs: WeakRef<object>[]; answers: Promise<number>[] } {
  const refs: WeakRef<object>[] = [];
  const answers: Promise<number>[] = [];
  for (let i = 0; i < count; i++) {
    const held = { items: [i] };
    refs.push(new WeakRef(held));
    answers.push(pool.enqueue(() => held.items.length));
  }
  return { refs, answers };
}

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

  it('leaves a context a task function kept as it was, while later attempts reuse the record', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
    let kept: TaskContext | undefined;
    await pool.enqueue(
      (ctx) => {
        kept = ctx;
        return ctx.signal.aborted;
      },
      { id: 'kept' },
    );
    const later: string[] = [];
    for (let i = 0; i < 3; i++)
      await pool.enqueue((ctx) => later.push(`${ctx.id}#${ctx.attempt}`), { id: `later-${i}` });
    // The next attempt takes the same record and is aborted by stop(): the kept context is not.
    const hanging = pool.enqueue(
      (ctx) =>
        new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason))),
      { id: 'hanging' },
    );
    await flush();
    pool.stop();
    await expect(hanging).rejects.toMatchObject({ name: 'PoolStoppedError' });
    expect(later).toEqual(['later-0#1', 'later-1#1', 'later-2#1']);
    expect({ id: kept?.id, attempt: kept?.attempt, aborted: kept?.signal.aborted }).toEqual({
      id: 'kept',
      attempt: 1,
      aborted: false,
    });
  });

  it('frees the record of a timed-out attempt only when its work settles; its late outcome answers no one', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 5 });
    const late = deferred<string>();
    const timedOut = pool.enqueue(() => late.promise);
    await expect(timedOut).rejects.toMatchObject({ name: 'TaskTimeoutError' });
    // The timed-out work still holds the slot (and its record): the next task waits for it.
    const next = pool.enqueue(() => 'next');
    expect(await stateOf(next)).toBe('pending');
    late.resolve('late');
    await expect(next).resolves.toBe('next');
    expect(await Promise.all([pool.enqueue(() => 'a'), pool.enqueue(() => 'b')])).toEqual(['a', 'b']);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, processedCount: 3, errorCount: 1 });
  });

  it('keeps no answered task function alive: a free record points at no caller task', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0 });
    const { refs, answers } = enqueueHoldingTasks(pool, 4);
    expect(await Promise.all(answers)).toEqual([1, 1, 1, 1]);
    await pool.drain();
    // A WeakRef is kept alive for the rest of the job that read or made it: collect in a later one.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    expect(refs.map((ref) => ref.deref() === undefined)).toEqual([true, true, true, true]);
    // The pool is still in use: its records are reused, not the reason the tasks were collected.
    await expect(pool.enqueue(() => 'still working')).resolves.toBe('still working');
  });
});
