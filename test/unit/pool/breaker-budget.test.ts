// A pool with a circuit breaker that also shares a ConcurrencyBudget: the breaker's half-open probes and
// its refusals must not be lost while the pool waits for a budget slot (issue 14: half-open recovery).
import { describe, expect, it, vi } from 'vitest';
import {
  CircuitOpenError,
  ConcurrencyBudget,
  circuitBreaker,
  ExecutorPool,
} from '../../../lib/pool/index.js';
import { awsError, deferred, flush, stateOf, useFakeTimersInEachTest } from './helpers.js';

const failing = async () => {
  throw awsError('SlowDown', 503);
};

function breakerPool(budget: ConcurrencyBudget, halfOpenRequests = 1) {
  const pool = new ExecutorPool({
    concurrency: 2,
    retries: 0,
    timeout: 0,
    budget,
    circuitBreaker: circuitBreaker({ threshold: 0.5, minimumRequests: 2, timeout: 1_000, halfOpenRequests }),
  });
  const states: string[] = [];
  pool.on('pool:circuitStateChange', ({ state }) => states.push(state));
  return { pool, states };
}

describe('circuit breaker with a shared budget', () => {
  useFakeTimersInEachTest();

  it('a half-open pool that waits for a budget slot keeps its probe, and recovers once the slot frees', async () => {
    const budget = new ConcurrencyBudget(1);
    const { pool, states } = breakerPool(budget);
    const other = new ExecutorPool({ concurrency: 1, timeout: 0, budget });
    for (let i = 0; i < 2; i++) await pool.enqueue(failing).catch(() => {});
    expect(pool.circuitState).toBe('open');
    await vi.advanceTimersByTimeAsync(1_000);

    const gate = deferred();
    const holding = other.enqueue(() => gate.promise);
    await flush();
    expect(budget.available).toBe(0);
    const ran: number[] = [];
    const results = [1, 2, 3].map((i) =>
      pool.enqueue(async () => {
        ran.push(i);
        return i;
      }),
    );
    await flush();
    expect(ran).toEqual([]); // no slot: the probe it was admitted as is given back, not spent
    gate.resolve();
    await holding;
    await flush();
    expect(ran).toEqual([1, 2, 3]);
    expect(await Promise.all(results)).toEqual([1, 2, 3]);
    expect(pool.circuitState).toBe('closed');
    expect(states).toEqual(['open', 'halfOpen', 'closed']);
    expect(budget.inUse).toBe(0);
  });

  it('tasks queued for a budget slot when the breaker opens are refused, and the pool drains', async () => {
    const budget = new ConcurrencyBudget(1);
    const { pool } = breakerPool(budget);
    const other = new ExecutorPool({ concurrency: 1, timeout: 0, budget });
    const first = deferred();
    const second = deferred();
    const a = pool.enqueue(() => first.promise).catch((e: unknown) => e);
    await flush();
    // The budget's one slot is A's; B and A's next tasks wait in line behind it.
    let otherRan = false;
    const b = other.enqueue(async () => {
      otherRan = true;
    });
    const a2 = pool.enqueue(() => second.promise).catch((e: unknown) => e);
    const queued = pool.enqueue(async () => 'never').catch((e: unknown) => e);
    const drained = pool.drain(); // waiting before the refusals: they must wake it
    await flush();
    first.reject(awsError('SlowDown', 503));
    await flush();
    expect(pool.circuitState).toBe('closed'); // 1 failure, below minimumRequests
    second.reject(awsError('SlowDown', 503));
    await flush();
    expect(pool.circuitState).toBe('open');
    expect((await a) as Error).toMatchObject({ name: 'SlowDown' });
    expect((await a2) as Error).toMatchObject({ name: 'SlowDown' });
    expect(await queued).toBeInstanceOf(CircuitOpenError);
    await b;
    expect(otherRan).toBe(true);
    expect(await stateOf(drained)).toBe('fulfilled');
    expect(pool.getStats()).toMatchObject({ queueSize: 0, activeCount: 0, errorCount: 3 });
    expect(budget.inUse).toBe(0);
  });

  it('while open, enqueue refuses at once with the time left until half-open', async () => {
    const budget = new ConcurrencyBudget(2);
    const { pool } = breakerPool(budget);
    for (let i = 0; i < 2; i++) await pool.enqueue(failing).catch(() => {});
    await vi.advanceTimersByTimeAsync(400);
    const err = await pool.enqueue(async () => 'x').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CircuitOpenError);
    expect((err as CircuitOpenError).retryAfterMs).toBeCloseTo(600, -1);
  });
});
