// Random mixes of paced and unpaced tasks (a Database's writes and reads) on a pool with a start interval:
// priorities, retries after SlowDown, fractional concurrency, a shared budget, a circuit breaker, caller
// aborts. Whatever happens, no two paced starts come closer than half an interval, no run of them beats the
// interval by more than half of one (lateness is banked, never more), the cap holds, and the pool ends idle
// with no timer left.
import { describe, expect, it, vi } from 'vitest';
import { ConcurrencyBudget, circuitBreaker, ExecutorPool } from '../../../lib/pool/index.js';
import { awsError, lcg, useFakeTimersInEachTest } from './helpers.js';

describe('ExecutorPool start interval: invariants under a random mix of paced and unpaced tasks', () => {
  useFakeTimersInEachTest();

  for (let seed = 1; seed <= 60; seed++) {
    it(`seed ${seed}`, async () => {
      const random = lcg(seed);
      const budget = random() < 0.5 ? new ConcurrencyBudget(1 + Math.floor(random() * 4)) : undefined;
      const pool = new ExecutorPool({
        concurrency: 4,
        timeout: 0,
        retries: 2,
        retryDelay: 5,
        ...(budget === undefined ? {} : { budget }),
        ...(random() < 0.3
          ? { circuitBreaker: circuitBreaker({ minimumRequests: 3, threshold: 0.9, timeout: 30 }) }
          : {}),
      });
      const other =
        budget === undefined ? undefined : new ExecutorPool({ concurrency: 3, timeout: 0, budget });
      const concurrency = random() < 0.3 ? 0.25 + random() * 3 : 1 + Math.floor(random() * 5);
      pool.setConcurrency(concurrency);
      const gap = 5 + Math.floor(random() * 30);
      pool.setStartInterval(gap);
      const caller = new AbortController();
      setTimeout(() => caller.abort(), 50 + Math.floor(random() * 400));
      const pacedStarts: number[] = [];
      let inFlight = 0;
      let peak = 0;
      const started = Date.now();
      const settled: Promise<unknown>[] = [];
      const count = 10 + Math.floor(random() * 30);
      for (let i = 0; i < count; i++) {
        const paced = random() < 0.5;
        const latency = Math.floor(random() * 40);
        const refusedOnce = random() < 0.2;
        const options = {
          paced,
          priority: Math.floor(random() * 3),
          ...(random() < 0.2 ? { signal: caller.signal } : {}),
        };
        const enqueue = () =>
          pool
            .enqueue(async (ctx) => {
              if (paced) pacedStarts.push(Date.now() - started);
              inFlight += 1;
              peak = Math.max(peak, inFlight);
              await new Promise((resolve) => setTimeout(resolve, latency));
              inFlight -= 1;
              if (refusedOnce && ctx.attempt === 1) throw awsError('SlowDown', 503);
            }, options)
            .catch((error: unknown) => error);
        settled.push(new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 200))).then(enqueue));
        if (other !== undefined && random() < 0.3)
          settled.push(other.enqueue(() => new Promise((resolve) => setTimeout(resolve, latency))));
      }
      const all = Promise.all(settled);
      await vi.runAllTimersAsync();
      await all;
      expect(peak).toBeLessThanOrEqual(Math.ceil(concurrency));
      for (let i = 0; i < pacedStarts.length; i++) {
        for (let j = i + 1; j < pacedStarts.length; j++) {
          const apart = pacedStarts[j]! - pacedStarts[i]!;
          expect(apart, `paced starts ${i} and ${j} of ${pacedStarts}`).toBeGreaterThanOrEqual(
            Math.max(gap / 2, (j - i) * gap - gap / 2),
          );
        }
      }
      expect(pool.getStats()).toMatchObject({ queueSize: 0, activeCount: 0 });
      expect(vi.getTimerCount()).toBe(0);
      pool.stop();
      other?.stop();
    });
  }
});
