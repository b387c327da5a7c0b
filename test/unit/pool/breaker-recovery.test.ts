// A half-open breaker must always get its probes' verdict, or it waits for them forever and every task
// queued behind them with it (issue 14: the breaker's half-open recovery).
import { describe, expect, it, vi } from 'vitest';
import { circuitBreaker, ExecutorPool, TaskAbortedError } from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

function openBreakerPool(halfOpenRequests: number) {
  const pool = new ExecutorPool({
    concurrency: 2,
    retries: 0,
    timeout: 0,
    circuitBreaker: circuitBreaker({ threshold: 0.5, minimumRequests: 2, timeout: 1_000, halfOpenRequests }),
  });
  const states: string[] = [];
  pool.on('pool:circuitStateChange', ({ state }) => states.push(state));
  return { pool, states };
}

async function open(pool: ExecutorPool): Promise<void> {
  for (let i = 0; i < 2; i++) {
    await pool
      .enqueue(async () => {
        throw awsError('SlowDown', 503);
      })
      .catch(() => {});
  }
  expect(pool.circuitState).toBe('open');
  await vi.advanceTimersByTimeAsync(1_000);
}

describe('circuit breaker half-open recovery', () => {
  useFakeTimersInEachTest();

  it('a probe whose caller aborts is given back: the next queued task probes and the breaker closes', async () => {
    const { pool, states } = openBreakerPool(1);
    await open(pool);
    const caller = new AbortController();
    const abandoned = deferred<string>();
    const probe = pool.enqueue(() => abandoned.promise, { signal: caller.signal }).catch((e: unknown) => e);
    const next = pool.enqueue(async () => 'next');
    await flush();
    expect(pool.circuitState).toBe('halfOpen');
    expect(await stateOf(next)).toBe('pending'); // waits behind the one probe
    caller.abort(new Error('client gone'));
    expect(await probe).toBeInstanceOf(TaskAbortedError);
    expect(await stateOf(next)).toBe('fulfilled');
    expect(await next).toBe('next');
    expect(pool.circuitState).toBe('closed');
    expect(states).toEqual(['open', 'halfOpen', 'closed']);
    abandoned.resolve('late'); // the abandoned work returning later changes nothing
    expect(await pool.enqueue(async () => 'after')).toBe('after');
    expect(pool.circuitState).toBe('closed');
  });

  it('an aborted probe whose work never returns still lets the breaker recover on the other slot', async () => {
    const { pool } = openBreakerPool(1);
    await open(pool);
    const caller = new AbortController();
    void pool.enqueue(() => new Promise<never>(() => {}), { signal: caller.signal }).catch(() => {});
    const waiting = [1, 2, 3].map((i) => pool.enqueue(async () => i));
    await flush();
    caller.abort();
    expect(await stateOf(Promise.all(waiting))).toBe('fulfilled');
    expect(await Promise.all(waiting)).toEqual([1, 2, 3]);
    expect(pool.circuitState).toBe('closed');
    expect(pool.getStats().activeCount).toBe(1); // the abandoned work keeps its slot
  });
});
