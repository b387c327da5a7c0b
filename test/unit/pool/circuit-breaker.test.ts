import { describe, expect, it, vi } from 'vitest';
import { CircuitOpenError, circuitBreaker, ExecutorPool } from '../../../lib/pool/index.js';
import { awsError, deferred, flush, useFakeTimersInEachTest } from './helpers.js';

function breakerPool() {
  const pool = new ExecutorPool({
    concurrency: 4,
    retries: 0,
    timeout: 0,
    circuitBreaker: circuitBreaker({
      threshold: 0.5,
      minimumRequests: 4,
      timeout: 1_000,
      halfOpenRequests: 2,
    }),
  });
  const states: string[] = [];
  pool.on('pool:circuitStateChange', ({ state }) => states.push(state));
  return { pool, states };
}

const fail = async () => {
  throw awsError('SlowDown', 503);
};

describe('circuit breaker', () => {
  useFakeTimersInEachTest();

  it('stays closed below minimumRequests, opens at the threshold, then rejects fast without running', async () => {
    const { pool, states } = breakerPool();
    await pool.enqueue(async () => 'ok');
    await pool.enqueue(fail).catch(() => {});
    await pool.enqueue(async () => 'ok');
    expect(pool.circuitState).toBe('closed'); // 1 of 3 failed, and below minimumRequests anyway
    await pool.enqueue(fail).catch(() => {});
    expect(pool.circuitState).toBe('open'); // 2 of 4 = threshold 0.5
    expect(states).toEqual(['open']);
    let ran = false;
    const refused = pool.enqueue(async () => {
      ran = true;
    });
    await expect(refused).rejects.toBeInstanceOf(CircuitOpenError);
    await expect(refused).rejects.toMatchObject({ name: 'CircuitOpenError' });
    expect(ran).toBe(false);
  });

  it('does not count permanent errors (4xx) as failures', async () => {
    const { pool } = breakerPool();
    for (let i = 0; i < 6; i++) {
      await pool
        .enqueue(async () => {
          throw awsError('AccessDenied', 403);
        })
        .catch(() => {});
    }
    expect(pool.circuitState).toBe('closed');
  });

  it('half-opens after `timeout`, admits `halfOpenRequests` probes, and closes when they succeed', async () => {
    const { pool, states } = breakerPool();
    for (let i = 0; i < 4; i++) await pool.enqueue(fail).catch(() => {});
    expect(pool.circuitState).toBe('open');
    await vi.advanceTimersByTimeAsync(1_000);
    const gates = [deferred(), deferred()];
    const started: number[] = [];
    const results = [0, 1, 2, 3].map((i) =>
      pool.enqueue(async () => {
        started.push(i);
        if (i < 2) await gates[i]!.promise;
        return i;
      }),
    );
    await flush();
    expect(pool.circuitState).toBe('halfOpen');
    expect(started).toEqual([0, 1]); // only the probes run; the rest wait instead of failing
    gates[0]!.resolve();
    await flush();
    expect(started).toEqual([0, 1]);
    gates[1]!.resolve();
    expect(await Promise.all(results)).toEqual([0, 1, 2, 3]);
    expect(pool.circuitState).toBe('closed');
    expect(states).toEqual(['open', 'halfOpen', 'closed']);
  });

  it('re-opens when a probe fails, and rejects the tasks waiting behind it', async () => {
    const { pool, states } = breakerPool();
    for (let i = 0; i < 4; i++) await pool.enqueue(fail).catch(() => {});
    await vi.advanceTimersByTimeAsync(1_000);
    const probe = pool.enqueue(fail).catch((e: unknown) => e);
    const probe2Gate = deferred();
    const probe2 = pool.enqueue(() => probe2Gate.promise.then(() => 'p2'));
    const waiting = pool.enqueue(async () => 'never').catch((e: unknown) => e);
    expect(((await probe) as Error).name).toBe('SlowDown');
    expect(pool.circuitState).toBe('open');
    expect(await waiting).toBeInstanceOf(CircuitOpenError);
    probe2Gate.resolve();
    expect(await probe2).toBe('p2'); // a late probe success does not close an open breaker
    expect(pool.circuitState).toBe('open');
    expect(states).toEqual(['open', 'halfOpen', 'open']);
  });
});
