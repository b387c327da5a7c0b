import { describe, expect, it, vi } from 'vitest';
import {
  CircuitOpenError,
  computeBackoff,
  ExecutorPool,
  isRetryableError,
  PoolStoppedError,
  TaskAbortedError,
  TaskTimeoutError,
} from '../../../lib/pool/index.js';
import { retryBackoff } from '../../../lib/pool/retry-policy.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

describe('isRetryableError', () => {
  it.each([
    ['S3 SlowDown (503)', awsError('SlowDown', 503), true],
    ['throttling by name', awsError('ThrottlingException', 400), true],
    ['S3 RequestTimeout (400, listed by name)', awsError('RequestTimeout', 400), true],
    ['HTTP 429', awsError('SomethingNew', 429), true],
    ['HTTP 500', awsError('Whatever', 500), true],
    ['HTTP 502', awsError('Whatever', 502), true],
    ['HTTP 504', awsError('Whatever', 504), true],
    ['HTTP 400', awsError('InvalidArgument', 400), false],
    ['HTTP 403', awsError('AccessDenied', 403), false],
    ['HTTP 404', awsError('NoSuchKey', 404), false],
    ['HTTP 501', awsError('NotImplemented', 501), false],
    ['validation error', Object.assign(new Error('bad field'), { name: 'ValidationError' }), false],
    ['TypeError', new TypeError('x is not a function'), false],
    ['$retryable', Object.assign(new Error('transient'), { $retryable: { throttling: false } }), true],
    ['ECONNRESET code', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }), true],
    ['ETIMEDOUT code', Object.assign(new Error('connect ETIMEDOUT'), { code: 'ETIMEDOUT' }), true],
    ['EPIPE code', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }), true],
    ['socket hang up', new Error('socket hang up'), true],
    ['our TaskTimeoutError', new TaskTimeoutError(10), true],
    ['our TaskAbortedError', new TaskAbortedError(), true],
    ['PoolStoppedError (transient for redelivery)', new PoolStoppedError(), true],
    ['CircuitOpenError (transient for redelivery)', new CircuitOpenError(10), true],
    ['a string', 'SlowDown', false],
    ['null', null, false],
  ])('%s -> %s', (_label, error, expected) => {
    expect(isRetryableError(error)).toBe(expected);
  });

  it('takes extra names from the given list, keeping the built-in rules', () => {
    const custom = awsError('MyTransient');
    expect(isRetryableError(custom)).toBe(false);
    expect(isRetryableError(custom, ['MyTransient'])).toBe(true);
    expect(isRetryableError(awsError('SlowDown', 503), ['MyTransient'])).toBe(true);
    expect(isRetryableError(awsError('SlowDown'), ['MyTransient'])).toBe(false);
  });
});

describe('computeBackoff', () => {
  const policy = { retryDelay: 100, maxRetryDelay: 1000, jitter: 'full' as const };

  it('full jitter: uniform in [0, min(cap, base * 2^(n-1))]', () => {
    expect(computeBackoff(policy, 1, 0, () => 0.999999)).toBeCloseTo(100, 1);
    expect(computeBackoff(policy, 3, 0, () => 0.5)).toBeCloseTo(200, 5);
    expect(computeBackoff(policy, 10, 0, () => 0.999999)).toBeLessThanOrEqual(1000);
    expect(computeBackoff(policy, 10, 0, () => 0.999999)).toBeGreaterThan(999);
    expect(computeBackoff(policy, 2000, 0, () => 0.5)).toBe(500);
    for (let n = 1; n < 20; n++) {
      const d = computeBackoff(policy, n);
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(Math.min(1000, 100 * 2 ** (n - 1)));
    }
  });

  it('decorrelated jitter stays within [base, min(cap, 3 * previous)]', () => {
    const decorrelated = { ...policy, jitter: 'decorrelated' as const };
    let previous = 0;
    for (let n = 1; n < 30; n++) {
      const d = computeBackoff(decorrelated, n, previous);
      expect(d).toBeGreaterThanOrEqual(100);
      expect(d).toBeLessThanOrEqual(Math.min(1000, Math.max(100, previous * 3)));
      previous = d;
    }
  });

  it('none: the capped exponential itself', () => {
    const none = { ...policy, jitter: 'none' as const };
    expect([1, 2, 3, 4, 5, 6].map((n) => computeBackoff(none, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });
});

describe('retryBackoff: the pool steps lib/backoff with the same waits computeBackoff gives', () => {
  const draws = [0.3, 0.9, 0.1, 0.6, 1, 0.45, 0.2];
  for (const jitter of ['full', 'decorrelated', 'none'] as const) {
    it(`${jitter}: one task's retry waits are computeBackoff's for the same draws`, () => {
      const policy = { retryDelay: 100, maxRetryDelay: 1000, jitter };
      const stepped: number[] = [];
      const random = playback(draws);
      let wait = retryBackoff(policy, random).next();
      stepped.push(wait.duration);
      for (let n = 2; n <= draws.length; n++) {
        wait = wait.next();
        stepped.push(wait.duration);
      }
      const computed: number[] = [];
      const again = playback(draws);
      for (let n = 1; n <= draws.length; n++)
        computed.push(computeBackoff(policy, n, computed.at(-1) ?? 0, again));
      expect(stepped).toEqual(computed);
    });
  }

  it("a pool's task waits its strategy's first, second and third wait before retries 1, 2 and 3", async () => {
    vi.useFakeTimers();
    const random = vi.spyOn(Math, 'random');
    try {
      for (const draw of [0.5, 0.25, 1]) random.mockReturnValueOnce(draw);
      const pool = new ExecutorPool({ retries: 3, retryDelay: 100, maxRetryDelay: 1000, timeout: 0 });
      const delays: number[] = [];
      pool.on('pool:taskRetry', ({ delayMs }) => delays.push(delayMs));
      const task = pool.enqueue(() => Promise.reject(awsError('SlowDown', 503)));
      task.catch(() => undefined);
      await vi.runAllTimersAsync();
      await expect(task).rejects.toMatchObject({ name: 'SlowDown' });
      expect(delays).toEqual([50, 50, 400]);
    } finally {
      random.mockRestore();
      vi.useRealTimers();
    }
  });
});

/** A random source that plays `draws` back in order. */
function playback(draws: readonly number[]): () => number {
  let i = 0;
  return () => draws[i++ % draws.length]!;
}

describe('ExecutorPool retries', () => {
  useFakeTimersInEachTest();

  it('retries retryable errors up to `retries` times, then fails with the last error', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 3, retryDelay: 10, jitter: 'none', timeout: 0 });
    let calls = 0;
    const retryEvents: { attempt: number; delayMs: number }[] = [];
    pool.on('pool:taskRetry', ({ attempt, delayMs }) => retryEvents.push({ attempt, delayMs }));
    const outcome = pool
      .enqueue(async () => {
        calls += 1;
        throw awsError('SlowDown', 503);
      })
      .catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(((await outcome) as Error).name).toBe('SlowDown');
    expect(calls).toBe(4);
    expect(retryEvents).toEqual([
      { attempt: 1, delayMs: 10 },
      { attempt: 2, delayMs: 20 },
      { attempt: 3, delayMs: 40 },
    ]);
    expect(pool.getStats()).toMatchObject({ processedCount: 0, errorCount: 1, retryCount: 3 });
  });

  it('succeeds after transient failures and counts one processed task', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 3, retryDelay: 10, timeout: 0 });
    const result = pool.enqueue(async (ctx) => {
      if (ctx.attempt < 3) throw Object.assign(new Error('reset'), { code: 'ECONNRESET' });
      return `ok on ${ctx.attempt}`;
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await result).toBe('ok on 3');
    expect(pool.getStats()).toMatchObject({ processedCount: 1, errorCount: 0, retryCount: 2 });
  });

  it.each([
    ['HTTP 400', awsError('InvalidRequest', 400)],
    ['HTTP 403', awsError('AccessDenied', 403)],
    ['validation error', Object.assign(new Error('field x'), { name: 'ValidationError' })],
  ])('fails at once on %s', async (_label, error) => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 5, retryDelay: 10, timeout: 0 });
    let calls = 0;
    const outcome = pool
      .enqueue(async () => {
        calls += 1;
        throw error;
      })
      .catch((e: unknown) => e);
    expect(await outcome).toBe(error);
    expect(calls).toBe(1);
    expect(pool.getStats()).toMatchObject({ errorCount: 1, retryCount: 0 });
  });

  it('honours a per-task `retries` override', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 5, retryDelay: 1, timeout: 0 });
    let calls = 0;
    const outcome = pool
      .enqueue(
        async () => {
          calls += 1;
          throw awsError('ServiceUnavailable', 503);
        },
        { retries: 1 },
      )
      .catch(() => 'failed');
    await vi.advanceTimersByTimeAsync(100);
    expect(await outcome).toBe('failed');
    expect(calls).toBe(2);
  });

  it('frees the slot during backoff: queued work runs while the failed task waits', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 1,
      retryDelay: 1_000,
      jitter: 'none',
      timeout: 0,
    });
    const order: string[] = [];
    const flaky = pool.enqueue(async (ctx) => {
      order.push(`flaky#${ctx.attempt}`);
      if (ctx.attempt === 1) throw awsError('SlowDown', 503);
      return 'flaky done';
    });
    const other = pool.enqueue(async () => {
      order.push('other');
      return 'other done';
    });
    expect(await other).toBe('other done');
    expect(order).toEqual(['flaky#1', 'other']);
    expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0 });
    expect(await stateOf(flaky)).toBe('pending');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await flaky).toBe('flaky done');
    expect(order).toEqual(['flaky#1', 'other', 'flaky#2']);
  });

  it('re-enters the queue with its priority after the backoff', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 1,
      retryDelay: 100,
      jitter: 'none',
      timeout: 0,
    });
    const order: string[] = [];
    const gate = deferred();
    const urgent = pool.enqueue(
      async (ctx) => {
        order.push(`urgent#${ctx.attempt}`);
        if (ctx.attempt === 1) throw awsError('SlowDown', 503);
      },
      { priority: 10 },
    );
    const blocker = pool.enqueue(async () => {
      order.push('blocker');
      await gate.promise;
    });
    const rest = [1, 2, 3].map((i) => pool.enqueue(async () => void order.push(`normal-${i}`)));
    await vi.advanceTimersByTimeAsync(100);
    gate.resolve();
    await Promise.all([urgent, blocker, ...rest]);
    expect(order).toEqual(['urgent#1', 'blocker', 'urgent#2', 'normal-1', 'normal-2', 'normal-3']);
  });

  it('rejects at once when the caller aborts during the backoff, and never runs again', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 3,
      retryDelay: 10_000,
      jitter: 'none',
      timeout: 0,
    });
    const controller = new AbortController();
    let calls = 0;
    const outcome = pool
      .enqueue(
        async () => {
          calls += 1;
          throw awsError('SlowDown', 503);
        },
        { signal: controller.signal },
      )
      .catch((e: unknown) => e);
    await flush();
    expect(calls).toBe(1);
    controller.abort(new Error('client gone'));
    const error = (await outcome) as TaskAbortedError;
    expect(error.name).toBe('TaskAbortedError');
    expect((error.cause as Error).message).toBe('client gone');
    await vi.advanceTimersByTimeAsync(100_000);
    expect(calls).toBe(1);
    await pool.drain();
  });
  it('a caller abort during the backoff takes only that task off the backoff timer, leaving no timer behind', async () => {
    const pool = new ExecutorPool({
      concurrency: 2,
      retries: 3,
      retryDelay: 10_000,
      jitter: 'none',
      timeout: 0,
    });
    const drained = vi.fn();
    pool.on('pool:drained', drained);
    const calls = { a: 0, b: 0 };
    const flaky = (name: 'a' | 'b') => async () => {
      calls[name] += 1;
      if (calls[name] === 1) throw awsError('SlowDown', 503);
      return name;
    };
    const controller = new AbortController();
    const a = pool.enqueue(flaky('a'), { signal: controller.signal }).catch((e: unknown) => e);
    const b = pool.enqueue(flaky('b'));
    await flush();
    expect(calls).toEqual({ a: 1, b: 1 });
    expect(vi.getTimerCount()).toBe(1); // both wait on the one backoff timer
    controller.abort(new Error('client gone'));
    expect(await a).toBeInstanceOf(TaskAbortedError);
    expect(await stateOf(b)).toBe('pending');
    await vi.advanceTimersByTimeAsync(10_000);
    expect(await b).toBe('b');
    expect(calls).toEqual({ a: 1, b: 2 });
    expect(drained).toHaveBeenCalledTimes(1);

    // The last task waiting out a backoff aborts: the timer goes too (nothing keeps the process alive).
    const last = new AbortController();
    const d = pool
      .enqueue(
        async () => {
          throw awsError('SlowDown', 503);
        },
        { signal: last.signal },
      )
      .catch((e: unknown) => e);
    await flush();
    expect(vi.getTimerCount()).toBe(1);
    last.abort();
    expect(await d).toBeInstanceOf(TaskAbortedError);
    expect(vi.getTimerCount()).toBe(0);
    expect(drained).toHaveBeenCalledTimes(2); // the pool ran out of work again
    expect(await stateOf(pool.drain())).toBe('fulfilled');
    expect(pool.getStats()).toMatchObject({ queueSize: 0, activeCount: 0, processedCount: 1, errorCount: 2 });
  });
});
