// The edges of settling an attempt: listeners that re-enter the pool (stop, abort, enqueue, resize) while an
// attempt is settled, timeouts, retries, aborts and stop() interleaved with reused Attempt records
// (attempt-runner.ts) and per-attempt contexts (task-state.ts), errors that throw when read, queue-wait
// figures from the queue's enqueue times (priority-queue.ts, paced-queue.ts), and what free records and the
// queue's arrays keep alive.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it, vi } from 'vitest';
import {
  circuitBreaker,
  ExecutorPool,
  PoolStoppedError,
  TaskAbortedError,
  type TaskContext,
  TaskTimeoutError,
} from '../../../lib/pool/index.js';
import { awsError, deferred, flush, lcg, stateOf, useFakeTimersInEachTest } from './helpers.js';

setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Nothing queued, backing off or running, and the counters add up. */
function expectSettledPool(pool: ExecutorPool, processedCount: number, errorCount: number): void {
  expect(pool.getStats()).toMatchObject({ activeCount: 0, queueSize: 0, processedCount, errorCount });
  expect(pool.waiting).toBe(0);
}

// ---------------------------------------------------------------------------------------------------------
// Re-entrant listeners
// ---------------------------------------------------------------------------------------------------------

describe('re-entrant listeners while a record is settled', () => {
  useFakeTimersInEachTest();

  for (const event of ['pool:taskError', 'pool:taskRetry'] as const) {
    it(`stop() from a ${event} listener of a failure to be retried rejects that task and leaves nothing waiting`, async () => {
      const pool = new ExecutorPool({
        concurrency: 1,
        retries: 2,
        retryDelay: 20,
        jitter: 'none',
        timeout: 0,
      });
      let calls = 0;
      if (event === 'pool:taskError') {
        pool.on(event, ({ willRetry }) => {
          if (willRetry) pool.stop();
        });
      } else pool.on(event, () => pool.stop());
      const outcome = pool
        .enqueue(async () => {
          calls += 1;
          throw awsError('SlowDown', 503);
        })
        .catch((e: unknown) => e);
      await vi.advanceTimersByTimeAsync(200);
      // stop() promises: every queued, backing-off and running task is rejected at once.
      expect(await outcome).toBeInstanceOf(PoolStoppedError);
      expect(calls).toBe(1);
      expect(pool.waiting).toBe(0);
      expect(await stateOf(pool.drain())).toBe('fulfilled');
      expectSettledPool(pool, 0, 1);
    });
  }

  it('stop() from a pool:taskError listener of a timed-out attempt (willRetry: true) still rejects the task', async () => {
    const pool = new ExecutorPool({
      concurrency: 1,
      retries: 1,
      retryDelay: 20,
      jitter: 'none',
      timeout: 10,
    });
    const work = deferred<string>();
    let calls = 0;
    pool.on('pool:taskError', ({ willRetry }) => {
      if (willRetry) pool.stop();
    });
    const outcome = pool
      .enqueue(() => {
        calls += 1;
        return work.promise;
      })
      .catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(10);
    await vi.advanceTimersByTimeAsync(100);
    work.resolve('late');
    await flush();
    expect(await stateOf(outcome)).toBe('fulfilled'); // the caught rejection
    expect((await outcome) instanceof TaskTimeoutError || (await outcome) instanceof PoolStoppedError).toBe(
      true,
    );
    expect(calls).toBe(1);
    expectSettledPool(pool, 0, 1);
  });

  it("a caller's abort from a pool:taskError listener (willRetry: true) ends the task: no retry runs after the rejection", async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 2, retryDelay: 20, jitter: 'none', timeout: 0 });
    const caller = new AbortController();
    const attempts: number[] = [];
    pool.on('pool:taskError', ({ willRetry }) => {
      if (willRetry) caller.abort(new Error('gave up'));
    });
    const outcome = pool
      .enqueue(
        async (ctx) => {
          attempts.push(ctx.attempt);
          if (ctx.attempt === 1) throw awsError('SlowDown', 503);
          return 'ran again';
        },
        { signal: caller.signal },
      )
      .catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(200);
    expect(await outcome).toBeInstanceOf(TaskAbortedError);
    // Rejected with TaskAbortedError, so its function must not run again and it is one failed task.
    expect(attempts).toEqual([1]);
    expectSettledPool(pool, 0, 1);
  });

  it('setConcurrency() from a pool:taskCompleted listener (a controller) does not skip the finished attempt’s rest', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    // A controller re-applying its (unchanged) limit on every completion, as the README allows.
    pool.on('pool:taskCompleted', () => pool.setConcurrency(0.5));
    const starts: number[] = [];
    const tasks = [0, 1, 2].map(() =>
      pool.enqueue(async () => {
        starts.push(performance.now());
        await sleep(10);
      }),
    );
    const t0 = performance.now();
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(tasks);
    // Busy half the time: 10 ms of work, then 10 ms of rest before the slot starts the next one.
    expect(starts.map((t) => t - t0)).toEqual([0, 20, 40]);
  });

  it('a task enqueued from a pool:taskCompleted listener waits out the finished attempt’s rest (fractional concurrency)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, timeout: 0 });
    pool.setConcurrency(0.5);
    const starts: number[] = [];
    const work = async () => {
      starts.push(performance.now());
      await sleep(10);
    };
    let follow: Promise<void> | undefined;
    pool.on('pool:taskCompleted', () => {
      follow ??= pool.enqueue(work);
    });
    const t0 = performance.now();
    const first = pool.enqueue(work);
    await vi.advanceTimersByTimeAsync(100);
    await first;
    await follow;
    // The same task enqueued right after the listener would wait for the rest (10 ms): inside it, too.
    expect(starts.map((t) => t - t0)).toEqual([0, 20]);
  });

  it('a retry with retryDelay 0 still waits out the failed attempt’s rest (fractional concurrency)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 1, retryDelay: 0, jitter: 'none', timeout: 0 });
    pool.setConcurrency(0.5);
    const starts: number[] = [];
    const t0 = performance.now();
    const result = pool.enqueue(async (ctx) => {
      starts.push(performance.now());
      await sleep(10);
      if (ctx.attempt === 1) throw awsError('SlowDown', 503);
      return ctx.attempt;
    });
    await vi.advanceTimersByTimeAsync(100);
    expect(await result).toBe(2);
    // The failed attempt was answered (not a stall): its slot rests 10 ms before the retry starts in it.
    expect(starts.map((t) => t - t0)).toEqual([0, 20]);
  });

  it('listeners that enqueue, stop and resize while records settle: each caller gets its own value and true figures', async () => {
    const pool = new ExecutorPool({ concurrency: 3, retries: 1, retryDelay: 5, jitter: 'none', timeout: 25 });
    const random = lcg(7);
    const startedAt = new Map<string, number>();
    const problems: string[] = [];
    const results: Promise<unknown>[] = [];
    const expected = new Map<string, string>();
    let n = 0;
    const add = (depth: number) => {
      const id = `t${n++}`;
      const latency = Math.floor(random() * 35); // some time out (25 ms)
      const fails = random() < 0.2;
      expected.set(id, id);
      results.push(
        pool
          .enqueue(
            async (ctx) => {
              startedAt.set(`${ctx.id}#${ctx.attempt}`, performance.now());
              await sleep(latency);
              if (fails && ctx.attempt === 1) throw awsError('SlowDown', 503);
              return ctx.id;
            },
            { id, priority: depth % 3 },
          )
          .then(
            (value) => {
              if (value !== id) problems.push(`${id} got ${String(value)}`);
              return value;
            },
            (error: unknown) => error,
          ),
      );
    };
    pool.on('pool:taskStarted', (e) => {
      if (e.queueWaitMs < 0) problems.push(`${e.id} negative queue wait`);
      if (n < 60 && random() < 0.5) add(n);
    });
    pool.on('pool:taskCompleted', (e) => {
      const start = startedAt.get(`${e.id}#${e.attempt}`);
      if (start === undefined) problems.push(`${e.id}#${e.attempt} completed, never started`);
      else if (performance.now() - start !== e.durationMs)
        problems.push(`${e.id}#${e.attempt} duration ${e.durationMs} vs ${performance.now() - start}`);
      if (n < 60) add(n);
      if (random() < 0.2) pool.setConcurrency(1 + Math.floor(random() * 4));
    });
    pool.on('pool:taskError', (e) => {
      if (!startedAt.has(`${e.id}#${e.attempt}`)) problems.push(`${e.id}#${e.attempt} failed, never started`);
    });
    for (let i = 0; i < 5; i++) add(0);
    await vi.advanceTimersByTimeAsync(2_000);
    await Promise.all(results);
    expect(problems).toEqual([]);
    const stats = pool.getStats();
    expect(stats.processedCount + stats.errorCount).toBe(results.length);
    expectSettledPool(pool, stats.processedCount, stats.errorCount);
    // Now stop from a completion listener with work in every state.
    const hanging = [1, 2, 3, 4, 5].map(() =>
      pool.enqueue(() => sleep(50).then(() => 'x')).catch((e: unknown) => e),
    );
    pool.on('pool:taskCompleted', () => pool.stop());
    const quick = pool.enqueue(async () => 'quick', { priority: 100 });
    await vi.advanceTimersByTimeAsync(200);
    const outcomes = await Promise.all([quick, ...hanging]);
    expect(
      outcomes.filter((o) => o instanceof PoolStoppedError).length +
        outcomes.filter((o) => o === 'x' || o === 'quick').length,
    ).toBe(6);
    expect(pool.getStats().activeCount).toBe(0);
    expect(pool.waiting).toBe(0);
  });

  it('a probe aborted from its own pool:taskStarted listener hands the probe on; a listener enqueue after the close runs', async () => {
    const pool = new ExecutorPool({
      concurrency: 2,
      retries: 0,
      timeout: 0,
      circuitBreaker: circuitBreaker({
        threshold: 0.5,
        minimumRequests: 2,
        timeout: 100,
        halfOpenRequests: 1,
      }),
    });
    for (let i = 0; i < 2; i++)
      await pool
        .enqueue(async () => {
          throw awsError('SlowDown', 503);
        })
        .catch(() => {});
    expect(pool.circuitState).toBe('open');
    await vi.advanceTimersByTimeAsync(100);
    const caller = new AbortController();
    pool.on('pool:taskStarted', ({ id }) => {
      if (id === 'probe') caller.abort(new Error('never mind'));
    });
    let followed: Promise<unknown> | undefined;
    pool.on('pool:taskCompleted', ({ id }) => {
      if (id === 'second') followed = pool.enqueue(async () => 'follow', { id: 'follow' });
    });
    const ran: string[] = [];
    const probe = pool
      .enqueue(
        (ctx) => {
          ran.push(ctx.id);
          return sleep(10);
        },
        { id: 'probe', signal: caller.signal },
      )
      .catch((e: unknown) => e);
    const second = pool.enqueue(
      (ctx) => {
        ran.push(ctx.id);
        return sleep(10).then(() => 'second');
      },
      { id: 'second' },
    );
    await vi.advanceTimersByTimeAsync(100);
    expect(await probe).toBeInstanceOf(TaskAbortedError);
    expect(await second).toBe('second');
    expect(ran).toEqual(['probe', 'second']);
    expect(pool.circuitState).toBe('closed');
    expect(await followed).toBe('follow');
    expectSettledPool(pool, 2, 3);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Timeouts, retries, aborts, stop() and odd work
// ---------------------------------------------------------------------------------------------------------

describe('timeouts, retries, aborts and stop interleaved with record reuse', () => {
  useFakeTimersInEachTest();

  it('a timed-out attempt settling after its retry finished answers no one and frees its slot once', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 1, retryDelay: 5, jitter: 'none', timeout: 10 });
    const events: string[] = [];
    pool.on('pool:taskCompleted', (e) =>
      events.push(`done ${e.id}#${e.attempt} wait ${e.queueWaitMs} took ${e.durationMs}`),
    );
    pool.on('pool:taskError', (e) =>
      events.push(`error ${e.id}#${e.attempt} ${(e.error as Error).name} ${e.willRetry}`),
    );
    const late = deferred<string>();
    const result = pool.enqueue((ctx) => (ctx.attempt === 1 ? late.promise : sleep(3).then(() => 'retry')), {
      id: 'T',
    });
    await vi.advanceTimersByTimeAsync(10); // attempt 1 times out, retry waits 5 ms
    expect(pool.getStats().activeCount).toBe(1);
    await vi.advanceTimersByTimeAsync(5); // retry starts on the other slot (queue wait 0)
    expect(pool.getStats().activeCount).toBe(2);
    await vi.advanceTimersByTimeAsync(3);
    expect(await result).toBe('retry');
    expect(pool.getStats().activeCount).toBe(1); // the timed-out work still holds its slot
    // Records are reused meanwhile.
    expect(await Promise.all([pool.enqueue(() => 'a'), pool.enqueue(() => 'b')])).toEqual(['a', 'b']);
    late.resolve('late');
    await flush();
    expect(events).toEqual([
      'error T#1 TaskTimeoutError true',
      'done T#2 wait 0 took 3',
      'done 2#1 wait 0 took 0',
      'done 3#1 wait 0 took 0',
    ]);
    expectSettledPool(pool, 3, 0);
    expect(await pool.enqueue(() => 'after')).toBe('after');
    expectSettledPool(pool, 4, 0);
  });

  it('a late settlement after stop() frees its slot and reports nothing', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const events: string[] = [];
    pool.on('pool:taskCompleted', (e) => events.push(`done ${e.id}`));
    pool.on('pool:taskError', (e) => events.push(`error ${e.id}`));
    const works = [deferred<string>(), deferred<string>()];
    const outcomes = works.map((w, i) =>
      pool.enqueue(() => w.promise, { id: `w${i}` }).catch((e: unknown) => e),
    );
    const queued = pool.enqueue(() => 'never', { id: 'q' }).catch((e: unknown) => e);
    await flush();
    pool.stop();
    for (const o of [...outcomes, queued]) expect(await o).toBeInstanceOf(PoolStoppedError);
    expect(pool.getStats().activeCount).toBe(2);
    works[0]!.resolve('late');
    works[1]!.reject(awsError('SlowDown', 503));
    await flush();
    expect(events).toEqual([]);
    expectSettledPool(pool, 0, 3);
    expect(await stateOf(pool.pause())).toBe('fulfilled');
  });

  it('a synchronous throw is retried on a fresh context and counted once', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 2, retryDelay: 1, jitter: 'none', timeout: 0 });
    const contexts: TaskContext[] = [];
    const result = pool.enqueue((ctx) => {
      contexts.push(ctx);
      if (ctx.attempt < 3) throw awsError('SlowDown', 503);
      return ctx.attempt;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(await result).toBe(3);
    expect(new Set(contexts).size).toBe(3);
    expect(contexts.map((c) => c.attempt)).toEqual([1, 2, 3]);
    expect(pool.getStats()).toMatchObject({ retryCount: 2 });
    expectSettledPool(pool, 1, 0);
  });

  it('a thenable that calls back twice, then throws, settles its attempt once', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const odd = (value: string) => ({
      // biome-ignore lint/suspicious/noThenProperty: an odd thenable is the point of the test.
      then(ok: (v: string) => void, fail: (e: unknown) => void) {
        ok(value);
        fail(new Error('forged'));
        ok('again');
        throw new Error('then threw after');
      },
    });
    const results = await Promise.all([
      pool.enqueue(() => odd('a') as unknown as Promise<string>),
      pool.enqueue(() => odd('b') as unknown as Promise<string>),
      pool.enqueue(() => 'c'),
    ]);
    expect(results).toEqual(['a', 'b', 'c']);
    expectSettledPool(pool, 3, 0);
  });

  it('a native promise whose constructor getter throws fails its task instead of throwing out of enqueue', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const work = () => {
      const promise = Promise.resolve('value');
      Object.defineProperty(promise, 'constructor', {
        get() {
          throw new Error('constructor getter threw');
        },
      });
      return promise;
    };
    let outcome: Promise<unknown> | undefined;
    let thrown: unknown;
    try {
      outcome = pool.enqueue(work).catch((e: unknown) => e);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeUndefined();
    expect(await outcome).toMatchObject({ message: 'constructor getter threw' });
    // Its slot is free again: the next task runs.
    expect(await stateOf(pool.enqueue(() => 'next'))).toBe('fulfilled');
    expectSettledPool(pool, 1, 1);
  });

  it('a rejection whose name getter throws still fails its caller and frees the slot for the queued task', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    // A rejection value that throws on property access (a revoked Proxy, a lazy getter of a buggy library).
    const weird = {
      get name(): string {
        throw new Error('name getter threw');
      },
      message: 'weird',
    };
    const outcome = pool
      .enqueue(async () => {
        throw weird;
      })
      .catch((e: unknown) => e);
    const next = pool.enqueue(() => 'next');
    expect(await stateOf(outcome)).toBe('fulfilled'); // the caught rejection
    expect(await stateOf(next)).toBe('fulfilled');
    expectSettledPool(pool, 1, 1);
  });

  it('a context kept by its function reads its own attempt, id and abort reason after its record was reused', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 1, retryDelay: 5, jitter: 'none', timeout: 10 });
    const kept: TaskContext[] = [];
    const late = deferred<void>();
    // Attempt 1 times out (signal never read until later), attempt 2 succeeds.
    const timedOut = pool.enqueue(
      (ctx) => {
        kept.push(ctx);
        return ctx.attempt === 1 ? late.promise.then(() => 'late') : 'second';
      },
      { id: 'timed' },
    );
    await vi.advanceTimersByTimeAsync(10);
    late.resolve();
    await vi.advanceTimersByTimeAsync(10);
    expect(await timedOut).toBe('second');
    // A caller-aborted task on the (reused) record.
    const caller = new AbortController();
    const aborted = pool
      .enqueue(
        (ctx) => {
          kept.push(ctx);
          return new Promise(() => {});
        },
        { id: 'aborted', signal: caller.signal },
      )
      .catch((e: unknown) => e);
    await flush();
    caller.abort('reason-of-caller');
    expect(await aborted).toBeInstanceOf(TaskAbortedError);
    // Another pool: three tasks reuse one record, then the stopped task takes it again.
    const pool2 = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    for (let i = 0; i < 3; i++) await pool2.enqueue((ctx) => kept.push(ctx));
    const stopped = pool2
      .enqueue((ctx) => {
        kept.push(ctx);
        return new Promise(() => {});
      })
      .catch((e: unknown) => e);
    await flush();
    pool2.stop();
    expect(await stopped).toBeInstanceOf(PoolStoppedError);
    const [t1, t2, a, p1, p2, p3, s] = kept;
    expect([t1?.id, t1?.attempt, t2?.id, t2?.attempt, a?.id, a?.attempt]).toEqual([
      'timed',
      1,
      'timed',
      2,
      'aborted',
      1,
    ]);
    expect(t1?.signal.reason).toBeInstanceOf(TaskTimeoutError);
    expect(t2?.signal.aborted).toBe(false);
    expect(a?.signal.reason).toBeInstanceOf(TaskAbortedError);
    expect((a!.signal.reason as Error).cause).toBe('reason-of-caller');
    expect([p1, p2, p3].map((c) => `${c?.id}#${c?.attempt}:${c?.signal.aborted}`)).toEqual([
      '1#1:false',
      '2#1:false',
      '3#1:false',
    ]);
    expect(s?.signal.reason).toBeInstanceOf(PoolStoppedError);
  });

  it('stop() during a timed-out retry chain: every caller rejected, slots freed as work settles, counters add up', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 3, retryDelay: 4, jitter: 'none', timeout: 6 });
    const pending: Array<() => void> = [];
    const outcomes = Array.from({ length: 6 }, (_, i) =>
      pool
        .enqueue(
          (ctx) =>
            new Promise<string>((resolve) => {
              // Ignores its signal; settles only when the test says so.
              pending.push(() => resolve(`${i}#${ctx.attempt}`));
            }),
          { id: `t${i}` },
        )
        .catch((e: unknown) => e),
    );
    await vi.advanceTimersByTimeAsync(6); // first two time out; retries wait 4 ms and find no slot
    pending.shift()!(); // one slot frees: a retry (or a queued task) starts
    await vi.advanceTimersByTimeAsync(5);
    pool.stop();
    const results = await Promise.all(outcomes);
    expect(results.every((r) => r instanceof PoolStoppedError || r instanceof TaskTimeoutError)).toBe(true);
    expect(results.filter((r) => r instanceof PoolStoppedError).length).toBe(6);
    while (pending.length > 0) pending.shift()!();
    await flush();
    expectSettledPool(pool, 0, 6);
  });
});

describe('slow listeners (real time)', () => {
  it('a slow pool:taskCompleted listener does not eat into the timeout of the task started after it', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 400 });
    let slow = true;
    pool.on('pool:taskCompleted', () => {
      if (!slow) return;
      slow = false;
      // A synchronous listener that takes 300 ms (serialising, logging to a blocking stream...).
      const until = performance.now() + 300;
      while (performance.now() < until) {
        // busy
      }
    });
    const started: number[] = [];
    const first = pool.enqueue(() => 'first');
    const second = pool
      .enqueue(async () => {
        started.push(performance.now());
        await sleep(150);
        return 'second';
      })
      .catch((e: unknown) => e);
    expect(await first).toBe('first');
    // 150 ms of work under a 400 ms per-attempt timeout: it must not time out (dated before the listener, it
    // would have 100 ms).
    expect(await second).toBe('second');
    expectSettledPool(pool, 2, 0);
  });
});

describe('seeded mixed workload (differential log)', () => {
  useFakeTimersInEachTest();

  for (const seed of [1, 2, 3, 4, 5]) {
    it(`seed ${seed}: every caller gets its own outcome, kept contexts stay their own, counters add up`, async () => {
      const random = lcg(seed);
      const pool = new ExecutorPool({
        concurrency: 3,
        retries: 2,
        retryDelay: 4,
        jitter: 'none',
        timeout: 15,
        circuitBreaker: circuitBreaker({
          threshold: 0.6,
          minimumRequests: 10,
          windowSize: 20,
          timeout: 30,
          halfOpenRequests: 2,
        }),
      });
      const log: string[] = [];
      const at = () => performance.now().toFixed(3);
      pool.on('pool:taskStarted', (e) =>
        log.push(`${at()} start ${e.id}#${e.attempt} a=${e.activeCount} w=${e.queueWaitMs}`),
      );
      pool.on('pool:taskCompleted', (e) =>
        log.push(`${at()} done ${e.id}#${e.attempt} w=${e.queueWaitMs} d=${e.durationMs}`),
      );
      pool.on('pool:taskError', (e) =>
        log.push(
          `${at()} error ${e.id}#${e.attempt} ${(e.error as Error).name} r=${e.willRetry} d=${e.durationMs}`,
        ),
      );
      pool.on('pool:taskRetry', (e) => log.push(`${at()} retry ${e.id}#${e.attempt} ${e.delayMs}`));
      pool.on('pool:circuitStateChange', (e) => log.push(`${at()} circuit ${e.state}`));
      // Tasks the pool took (an enqueue refused by an open breaker is not counted in errorCount).
      const accepted = new Set<string>();
      pool.on('pool:taskQueued', (e) => accepted.add(e.id));
      pool.on('pool:taskStarted', (e) => accepted.add(e.id));
      const kept: Array<{ ctx: TaskContext; id: string; attempt: number }> = [];
      const problems: string[] = [];
      const outcomes: Promise<unknown>[] = [];
      let n = 0;
      const add = () => {
        const id = `t${n++}`;
        const latency = Math.floor(random() * 20);
        const mode = random();
        const controller = random() < 0.15 ? new AbortController() : undefined;
        if (controller !== undefined)
          setTimeout(() => controller.abort(`abort ${id}`), Math.floor(random() * 30));
        outcomes.push(
          pool
            .enqueue(
              async (ctx) => {
                kept.push({ ctx, id, attempt: ctx.attempt });
                if (mode < 0.05) throw awsError('SlowDown', 503);
                await sleep(latency);
                if (mode < 0.3 && ctx.attempt === 1) throw awsError('SlowDown', 503);
                if (mode > 0.95) throw new Error('permanent');
                return id;
              },
              {
                id,
                priority: Math.floor(random() * 3),
                paced: random() < 0.7,
                ...(controller === undefined ? {} : { signal: controller.signal }),
                ...(random() < 0.2 ? { timeout: 5 + Math.floor(random() * 20) } : {}),
              },
            )
            .then(
              (value) => {
                if (value !== id) problems.push(`${id} resolved with ${String(value)}`);
                return value;
              },
              (error: unknown) => (error as Error).name,
            ),
        );
      };
      pool.on('pool:taskCompleted', () => {
        if (n < 150 && random() < 0.3) add();
      });
      for (let step = 0; step < 120; step++) {
        add();
        if (step === 40) pool.setStartInterval(2);
        if (step === 80) pool.setStartInterval(0);
        if (random() < 0.1) pool.setConcurrency([1, 2, 3, 4, 1.5, 2.5][Math.floor(random() * 6)]!);
        await vi.advanceTimersByTimeAsync(Math.floor(random() * 5));
      }
      await vi.advanceTimersByTimeAsync(10_000);
      const results = await Promise.all(outcomes);
      for (const { ctx, id, attempt } of kept) {
        if (ctx.id !== id || ctx.attempt !== attempt)
          problems.push(`kept ctx ${id}#${attempt} reads ${ctx.id}#${ctx.attempt}`);
      }
      expect(problems).toEqual([]);
      const stats = pool.getStats();
      expect(stats.processedCount).toBe(
        results.filter((r) => typeof r === 'string' && r.startsWith('t')).length,
      );
      expect(stats.processedCount + stats.errorCount).toBe(accepted.size);
      expectSettledPool(pool, stats.processedCount, stats.errorCount);
    });
  }
});

// ---------------------------------------------------------------------------------------------------------
// Queue-wait figures
// ---------------------------------------------------------------------------------------------------------

describe('queue-wait figures', () => {
  useFakeTimersInEachTest();

  /** Tracks when each task (re-)entered the queue and checks each started/completed attempt's queue wait. */
  function watchQueueWaits(pool: ExecutorPool) {
    const queuedAt = new Map<string, number>();
    const startedWait = new Map<string, number>();
    const problems: string[] = [];
    const waits: number[] = [];
    pool.on('pool:taskRetry', (e) => queuedAt.set(e.id, performance.now() + e.delayMs));
    pool.on('pool:taskStarted', (e) => {
      const expected = performance.now() - queuedAt.get(e.id)!;
      if (e.queueWaitMs !== expected)
        problems.push(`${e.id}#${e.attempt} started: ${e.queueWaitMs} != ${expected}`);
      startedWait.set(`${e.id}#${e.attempt}`, e.queueWaitMs);
      waits.push(e.queueWaitMs);
    });
    pool.on('pool:taskCompleted', (e) => {
      const started = startedWait.get(`${e.id}#${e.attempt}`);
      if (e.queueWaitMs !== started)
        problems.push(`${e.id}#${e.attempt} completed: ${e.queueWaitMs} != ${started}`);
    });
    const enqueued = (id: string) => queuedAt.set(id, performance.now());
    return { problems, waits, enqueued };
  }

  it('paced and unpaced tasks, priorities, retries, aborts and a start interval: each wait is start minus its own enqueue', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 2, retryDelay: 7, jitter: 'none', timeout: 30 });
    pool.setStartInterval(5);
    const { problems, waits, enqueued } = watchQueueWaits(pool);
    const random = lcg(11);
    const outcomes: Promise<unknown>[] = [];
    const controllers: AbortController[] = [];
    for (let i = 0; i < 80; i++) {
      const id = `t${i}`;
      const controller = new AbortController();
      controllers.push(controller);
      const latency = Math.floor(random() * 12);
      const failFirst = random() < 0.25;
      const paced = random() < 0.6;
      enqueued(id);
      outcomes.push(
        pool
          .enqueue(
            async (ctx) => {
              await sleep(latency);
              if (failFirst && ctx.attempt === 1) throw awsError('SlowDown', 503);
              return ctx.id;
            },
            { id, paced, priority: Math.floor(random() * 3), signal: controller.signal },
          )
          .catch((e: unknown) => e),
      );
      if (random() < 0.5) await vi.advanceTimersByTimeAsync(Math.floor(random() * 4));
      if (i % 7 === 3) controllers[Math.floor(random() * i)]!.abort();
    }
    await vi.advanceTimersByTimeAsync(5_000);
    await Promise.all(outcomes);
    expect(problems).toEqual([]);
    const { queueWait } = pool.getDetailedMetrics();
    expect(queueWait.count).toBe(waits.length);
    expect(queueWait.max).toBeCloseTo(Math.max(...waits), 6);
    const stats = pool.getStats();
    expect(stats.processedCount + stats.errorCount).toBe(80);
    expectSettledPool(pool, stats.processedCount, stats.errorCount);
  });

  it('keeps each queued task’s enqueue time through compaction of a long level with most tasks aborted', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const { problems, waits, enqueued } = watchQueueWaits(pool);
    const gate = deferred<void>();
    enqueued('blocker');
    const blocker = pool.enqueue(() => gate.promise, { id: 'blocker' });
    const outcomes: Promise<unknown>[] = [];
    const controllers: AbortController[] = [];
    for (let i = 0; i < 1500; i++) {
      const controller = new AbortController();
      controllers.push(controller);
      enqueued(`q${i}`);
      outcomes.push(
        pool.enqueue((ctx) => ctx.id, { id: `q${i}`, signal: controller.signal }).catch((e: unknown) => e),
      );
      vi.advanceTimersByTime(1);
    }
    // Abort three in four (in a scattered order) so the level compacts, renumbering its live tasks.
    for (let i = 0; i < 1500; i++) if (i % 4 !== 1) controllers[(i * 7) % 1500]!.abort();
    expect(pool.getStats().queueSize).toBe(375);
    vi.advanceTimersByTime(3);
    // More tasks after the compaction, at a later time.
    for (let i = 1500; i < 1600; i++) {
      enqueued(`q${i}`);
      outcomes.push(pool.enqueue((ctx) => ctx.id, { id: `q${i}` }).catch((e: unknown) => e));
      vi.advanceTimersByTime(1);
    }
    gate.resolve();
    await blocker;
    await vi.advanceTimersByTimeAsync(10);
    const results = await Promise.all(outcomes);
    expect(problems).toEqual([]);
    expect(waits.length).toBe(1 + 375 + 100);
    const ran = results.filter((r) => typeof r === 'string');
    expect(ran.length).toBe(475);
    // FIFO among equals survived the compaction.
    expect(ran).toEqual(
      [...ran].sort((a, b) => Number((a as string).slice(1)) - Number((b as string).slice(1))),
    );
    expectSettledPool(pool, 476, 1125);
  });

  it('keeps enqueue times when consumed slots are dropped from a long level while tasks keep arriving', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const { problems, waits, enqueued } = watchQueueWaits(pool);
    const outcomes: Promise<unknown>[] = [];
    let next = 0;
    const add = () => {
      const id = `q${next++}`;
      enqueued(id);
      outcomes.push(pool.enqueue(() => sleep(1).then(() => id), { id, paced: next % 3 !== 0 }));
    };
    for (let i = 0; i < 2500; i++) add();
    // Tasks arrive while the long levels drain (1 ms each, two at a time).
    for (let step = 0; step < 1200; step++) {
      if (step % 3 === 0) add();
      await vi.advanceTimersByTimeAsync(1);
    }
    await vi.advanceTimersByTimeAsync(3_000);
    await Promise.all(outcomes);
    expect(problems).toEqual([]);
    expect(waits.length).toBe(next);
    expectSettledPool(pool, next, 0);
  });

  it('an unpaced task passing a held paced one reports its own wait, and the paced one its own', async () => {
    const pool = new ExecutorPool({ concurrency: 3, retries: 0, timeout: 0 });
    pool.setStartInterval(50);
    const { problems, enqueued } = watchQueueWaits(pool);
    const waits = new Map<string, number>();
    pool.on('pool:taskStarted', (e) => waits.set(e.id, e.queueWaitMs));
    enqueued('w1');
    const w1 = pool.enqueue(() => 'w1', { id: 'w1' });
    vi.advanceTimersByTime(3);
    enqueued('w2');
    const w2 = pool.enqueue(() => 'w2', { id: 'w2' }); // held by the interval
    vi.advanceTimersByTime(4);
    enqueued('r1');
    const r1 = pool.enqueue(() => 'r1', { id: 'r1', paced: false, priority: -1 }); // passes the held w2
    await vi.advanceTimersByTimeAsync(100);
    expect(await Promise.all([w1, w2, r1])).toEqual(['w1', 'w2', 'r1']);
    expect(problems).toEqual([]);
    expect(Object.fromEntries(waits)).toEqual({ w1: 0, w2: 47, r1: 0 });
  });
});

// ---------------------------------------------------------------------------------------------------------
// Memory: free records and the queue's arrays keep no settled task alive
// ---------------------------------------------------------------------------------------------------------

/** Each task's function is the only holder of its object. Made outside any async frame. */
function holdingTask(refs: WeakRef<object>[], value: number): () => number {
  const held = { items: [value] };
  refs.push(new WeakRef(held));
  return () => held.items.length;
}

function holdingSlowTask(refs: WeakRef<object>[], value: number, ms: number): () => Promise<number> {
  const held = { items: [value] };
  refs.push(new WeakRef(held));
  return () => sleep(ms).then(() => held.items.length);
}

function enqueueAbortedQueued(
  pool: ExecutorPool,
  refs: WeakRef<object>[],
  count: number,
): Promise<unknown>[] {
  const outcomes: Promise<unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const controller = new AbortController();
    outcomes.push(pool.enqueue(holdingTask(refs, i), { signal: controller.signal }).catch(() => 'aborted'));
    controller.abort();
  }
  return outcomes;
}

function enqueueTimingOut(
  pool: ExecutorPool,
  refs: WeakRef<object>[],
  release: Array<() => void>,
): Promise<unknown> {
  const held = { items: [1] };
  refs.push(new WeakRef(held));
  return pool
    .enqueue(
      () =>
        new Promise<number>((resolve) => {
          release.push(() => resolve(held.items.length));
        }),
    )
    .catch(() => 'timed out');
}

function enqueueRetrying(pool: ExecutorPool, refs: WeakRef<object>[]): Promise<unknown> {
  const held = { items: [1] };
  refs.push(new WeakRef(held));
  return pool.enqueue((ctx) => {
    if (ctx.attempt === 1) throw awsError('SlowDown', 503);
    return held.items.length;
  });
}

async function collect(): Promise<void> {
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
  await new Promise((resolve) => setImmediate(resolve));
  collectGarbage();
}

const collected = (refs: WeakRef<object>[]) => refs.filter((ref) => ref.deref() === undefined).length;

describe('memory: what free records and queue arrays keep alive', () => {
  it('tasks aborted while queued are collectable while the queue still holds others and a blocker runs', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const gate = deferred<void>();
    const blocker = pool.enqueue(() => gate.promise);
    const refs: WeakRef<object>[] = [];
    const aborted = enqueueAbortedQueued(pool, refs, 5);
    const liveRefs: WeakRef<object>[] = [];
    const live = pool.enqueue(holdingTask(liveRefs, 9));
    expect(await Promise.all(aborted)).toEqual(['aborted', 'aborted', 'aborted', 'aborted', 'aborted']);
    await collect();
    expect(collected(refs)).toBe(5);
    expect(collected(liveRefs)).toBe(0); // still queued: must be kept
    gate.resolve();
    await blocker;
    expect(await live).toBe(1);
  });

  it('a popped task is collectable while its level still holds many others (no compaction yet)', async () => {
    const pool = new ExecutorPool({ concurrency: 1, retries: 0, timeout: 0 });
    const gate = deferred<void>();
    const blocker = pool.enqueue(() => gate.promise);
    const refs: WeakRef<object>[] = [];
    const outcomes: Promise<number>[] = [];
    for (let i = 0; i < 600; i++) outcomes.push(pool.enqueue(holdingTask(refs, i)));
    const tailGate = deferred<void>();
    const tail = pool.enqueue(() => tailGate.promise); // keeps the level alive after the 600 ran
    const after = pool.enqueue(() => 'after');
    gate.resolve();
    await blocker;
    await Promise.all(outcomes);
    expect(pool.getStats().queueSize).toBe(1);
    await collect();
    // At most one survivor: V8's optimized code for the pool's call of a task function can keep the one
    // closure it was specialised on (seen with the default JIT; none survives under --max-opt=0 or --jitless,
    // on this commit and on the previous one). Anything the queue or the records kept would be many.
    const alive = refs.flatMap((ref, i) => (ref.deref() === undefined ? [] : [i]));
    expect(alive.length).toBeLessThanOrEqual(1);
    tailGate.resolve();
    await tail;
    expect(await after).toBe('after');
  });

  it('a timed-out task is collectable once its late work settled, while its record serves other tasks', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 5 });
    const refs: WeakRef<object>[] = [];
    const release: Array<() => void> = [];
    const outcome = enqueueTimingOut(pool, refs, release);
    expect(await outcome).toBe('timed out');
    await collect();
    expect(collected(refs)).toBe(0); // its work still runs: its record (and slot) keep it
    release.shift()!();
    await flush();
    const otherRefs: WeakRef<object>[] = [];
    expect(await pool.enqueue(holdingSlowTask(otherRefs, 3, 1))).toBe(1);
    await collect();
    expect(collected(refs)).toBe(1);
    expect(collected(otherRefs)).toBe(1);
    expectSettledPool(pool, 1, 1);
  });

  it('a retried task and the aborted work of a stopped pool are collectable once settled', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 1, retryDelay: 1, timeout: 0 });
    const refs: WeakRef<object>[] = [];
    expect(await enqueueRetrying(pool, refs)).toBe(1);
    const stopRefs: WeakRef<object>[] = [];
    const release: Array<() => void> = [];
    const running = enqueueTimingOut(pool, stopRefs, release);
    await flush();
    pool.stop();
    expect(await running).toBe('timed out'); // (the catch-all: rejected by stop)
    release.shift()!();
    await flush();
    await collect();
    expect(collected(refs)).toBe(1);
    expect(collected(stopRefs)).toBe(1);
    expectSettledPool(pool, 1, 1);
  });
});
