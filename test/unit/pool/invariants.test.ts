import { describe, expect, it, vi } from 'vitest';
import { ConcurrencyBudget, circuitBreaker, ExecutorPool } from '../../../lib/pool/index.js';
import { awsError, lcg, useFakeTimersInEachTest } from './helpers.js';

/**
 * Random mixes of durations, failures (retryable or not), timeouts, work that ignores its signal, caller
 * aborts, live resizing and pause/resume, on two pools sharing a budget. Whatever happens, no attempt
 * starts above the pool's cap or the budget, every caller gets an answer, and the books balance.
 */
describe('invariants under random load', () => {
  useFakeTimersInEachTest();

  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`seed ${seed}`, async () => {
      const random = lcg(seed);
      const budget = new ConcurrencyBudget(6);
      const pools = [0, 1].map(
        () =>
          new ExecutorPool({
            concurrency: 4,
            budget,
            timeout: 40,
            retries: 2,
            retryDelay: 5,
            maxRetryDelay: 30,
            circuitBreaker: seed % 2 === 0 ? circuitBreaker({ minimumRequests: 20, timeout: 50 }) : undefined,
          }),
      );
      let running = 0;
      const runningIn = [0, 0];
      let violations = 0;
      for (const pool of pools) {
        pool.on('pool:taskStarted', ({ activeCount }) => {
          if (activeCount > pool.concurrency || budget.inUse > budget.total) violations += 1;
        });
      }
      const outcomes: Promise<string>[] = [];
      for (let i = 0; i < 120; i++) {
        const which = i % 2;
        const pool = pools[which]!;
        const duration = Math.floor(random() * 70);
        const kind = random();
        const ignoresSignal = random() < 0.3;
        const controller = random() < 0.1 ? new AbortController() : undefined;
        outcomes.push(
          pool
            .enqueue(
              (ctx) =>
                new Promise<string>((resolve, reject) => {
                  running += 1;
                  runningIn[which]! += 1;
                  // Real work (timed-out work that ignores its signal included) against the cap at this start.
                  if (runningIn[which]! > pool.concurrency || running > budget.total) violations += 1;
                  const finish = () => {
                    running -= 1;
                    runningIn[which]! -= 1;
                    if (kind < 0.15) reject(awsError('SlowDown', 503));
                    else if (kind < 0.2) reject(awsError('AccessDenied', 403));
                    else resolve('ok');
                  };
                  const timer = setTimeout(finish, duration);
                  if (!ignoresSignal) {
                    ctx.signal.addEventListener('abort', () => {
                      clearTimeout(timer);
                      running -= 1;
                      runningIn[which]! -= 1;
                      reject(ctx.signal.reason);
                    });
                  }
                }),
              { priority: Math.floor(random() * 3), signal: controller?.signal },
            )
            .then(
              (v) => v,
              (e: unknown) => (e as Error).name,
            ),
        );
        if (controller !== undefined) setTimeout(() => controller.abort(), Math.floor(random() * 50));
        if (random() < 0.05) pool.setConcurrency(1 + Math.floor(random() * 5));
        if (random() < 0.03) {
          void pool.pause();
          setTimeout(() => pool.resume(), 20);
        }
        if (random() < 0.3) await vi.advanceTimersByTimeAsync(Math.floor(random() * 10));
      }
      await vi.advanceTimersByTimeAsync(60_000);
      const settled = await Promise.all(outcomes);
      await Promise.all(pools.map((p) => p.drain()));

      expect(violations).toBe(0);
      expect(running).toBe(0);
      expect(settled).toHaveLength(120);
      expect(new Set(settled).size).toBeGreaterThan(1);
      for (const name of settled) {
        expect([
          'ok',
          'SlowDown',
          'AccessDenied',
          'TaskTimeoutError',
          'TaskAbortedError',
          'CircuitOpenError',
        ]).toContain(name);
      }
      const totals = pools.map((p) => p.getStats());
      expect(totals.reduce((n, s) => n + s.processedCount + s.errorCount, 0)).toBe(120);
      expect(totals.reduce((n, s) => n + s.processedCount, 0)).toBe(settled.filter((s) => s === 'ok').length);
      for (const stats of totals) expect(stats).toMatchObject({ activeCount: 0, queueSize: 0 });
      expect(budget.inUse).toBe(0);
    });
  }
});
