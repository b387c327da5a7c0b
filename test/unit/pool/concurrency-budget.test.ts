import { describe, expect, it } from 'vitest';
import { ConcurrencyBudget, ExecutorPool } from '../../../lib/pool/index.js';
import { type Deferred, deferred, flush } from './helpers.js';

/** Work that runs until released; `running` lists the gates of started tasks in start order. */
function tenant(name: string, pool: ExecutorPool, n: number, log: string[], running: Deferred<void>[] = []) {
  const gates: Deferred<void>[] = [];
  const results = Array.from({ length: n }, (_, i) => {
    const gate = deferred();
    gates.push(gate);
    return pool.enqueue(async () => {
      log.push(`${name}:${i}`);
      running.push(gate);
      await gate.promise;
    });
  });
  return { gates, results };
}

describe('ConcurrencyBudget', () => {
  it('caps the sum of in-flight work across pools, each pool also under its own cap', async () => {
    const budget = new ConcurrencyBudget(5);
    const a = new ExecutorPool({ concurrency: 4, budget, timeout: 0 });
    const b = new ExecutorPool({ concurrency: 2, budget, timeout: 0 });
    const log: string[] = [];
    const running: Deferred<void>[] = [];
    const ta = tenant('a', a, 10, log, running);
    const tb = tenant('b', b, 10, log, running);
    await flush();
    expect(a.getStats().activeCount + b.getStats().activeCount).toBe(5);
    expect(budget.inUse).toBe(5);
    let peak = 0;
    while (running.length > 0) {
      running.shift()!.resolve();
      await flush();
      peak = Math.max(peak, a.getStats().activeCount + b.getStats().activeCount);
      expect(a.getStats().activeCount).toBeLessThanOrEqual(4);
      expect(b.getStats().activeCount).toBeLessThanOrEqual(2);
    }
    expect(log).toHaveLength(20);
    expect(peak).toBeLessThanOrEqual(5);
    await Promise.all([...ta.results, ...tb.results]);
    expect(budget.inUse).toBe(0);
  });

  it('a small tenant’s tasks start within one slot turn while a big tenant has 1,000 queued', async () => {
    const budget = new ConcurrencyBudget(4);
    const big = new ExecutorPool({ concurrency: 4, budget, timeout: 0 });
    const small = new ExecutorPool({ concurrency: 4, budget, timeout: 0 });
    const log: string[] = [];
    const bigTenant = tenant('big', big, 1_000, log);
    await flush();
    expect(log).toEqual(['big:0', 'big:1', 'big:2', 'big:3']);
    const smallTenant = tenant('small', small, 5, log);
    await flush();
    expect(small.getStats().activeCount).toBe(0); // the budget is full

    // Free slots one at a time, always finishing the oldest running task.
    const running: Deferred<void>[] = [...bigTenant.gates.slice(0, 4)];
    let nextBig = 4;
    let nextSmall = 0;
    const startsAfterRelease: string[] = [];
    while (nextSmall < 5) {
      running.shift()!.resolve();
      const before = log.length;
      await flush();
      const started = log.slice(before);
      expect(started).toHaveLength(1); // one slot freed, one task started
      startsAfterRelease.push(started[0]!);
      if (started[0]!.startsWith('small')) running.push(smallTenant.gates[nextSmall++]!);
      else running.push(bigTenant.gates[nextBig++]!);
    }
    // The very first freed slot goes to the small tenant (it held none); after that the two alternate.
    expect(startsAfterRelease[0]).toBe('small:0');
    for (let i = 1; i < startsAfterRelease.length; i++) {
      const bigRun = startsAfterRelease
        .slice(0, i + 1)
        .join(',')
        .match(/(?:big:\d+,?){2,}$/);
      expect(
        bigRun,
        `two big starts in a row before small finished starting: ${startsAfterRelease}`,
      ).toBeNull();
    }
    expect(startsAfterRelease.filter((s) => s.startsWith('small'))).toHaveLength(5);
    expect(startsAfterRelease.length).toBeLessThanOrEqual(10);
    big.stop();
    for (const gate of [...bigTenant.gates, ...smallTenant.gates]) gate.resolve();
    await Promise.allSettled([...bigTenant.results, ...smallTenant.results]);
    expect(budget.inUse).toBe(0);
  });

  it('never gives a pool more than its own cap even when the budget has room', async () => {
    const budget = new ConcurrencyBudget(10);
    const capped = new ExecutorPool({ concurrency: 2, budget, timeout: 0 });
    const log: string[] = [];
    const t = tenant('c', capped, 6, log);
    await flush();
    expect(capped.getStats().activeCount).toBe(2);
    expect(budget.inUse).toBe(2);
    for (const gate of t.gates) gate.resolve();
    await Promise.all(t.results);
    expect(budget.inUse).toBe(0);
  });

  it('hands a paused pool’s turn to the others, and growing the budget starts waiting work at once', async () => {
    const budget = new ConcurrencyBudget(1);
    const a = new ExecutorPool({ concurrency: 3, budget, timeout: 0 });
    const b = new ExecutorPool({ concurrency: 3, budget, timeout: 0 });
    const log: string[] = [];
    const ta = tenant('a', a, 3, log);
    const tb = tenant('b', b, 3, log);
    await flush();
    expect(log).toEqual(['a:0']);
    budget.resize(3);
    await flush();
    expect(log).toEqual(['a:0', 'b:0', 'a:1']);
    const paused = b.pause();
    tb.gates[0]!.resolve();
    await paused;
    await flush();
    expect(log).toEqual(['a:0', 'b:0', 'a:1', 'a:2']);
    expect(() => budget.resize(0)).toThrow(RangeError);
    b.resume();
    for (const gate of [...ta.gates, ...tb.gates]) gate.resolve();
    await Promise.all([...ta.results, ...tb.results]);
    expect(budget.inUse).toBe(0);
  });
  it('a pool with more queued work takes each slot another pool frees, one after the other', async () => {
    const budget = new ConcurrencyBudget(2);
    const holder = new ExecutorPool({ concurrency: 2, budget, timeout: 0 });
    const waiter = new ExecutorPool({ concurrency: 3, budget, timeout: 0 });
    const log: string[] = [];
    const h = tenant('h', holder, 2, log);
    await flush();
    const w = tenant('w', waiter, 3, log);
    await flush();
    expect(log).toEqual(['h:0', 'h:1']);
    h.gates[0]!.resolve();
    await flush();
    expect(log).toEqual(['h:0', 'h:1', 'w:0']);
    // Still busy after that grant: back in line, so the next freed slot is its too (w:0 still runs).
    h.gates[1]!.resolve();
    await flush();
    expect(log).toEqual(['h:0', 'h:1', 'w:0', 'w:1']);
    expect(budget.inUse).toBe(2);
    for (const gate of w.gates) gate.resolve();
    await Promise.all([...h.results, ...w.results]);
    expect(log).toEqual(['h:0', 'h:1', 'w:0', 'w:1', 'w:2']);
    expect(budget.inUse).toBe(0);
  });
});
