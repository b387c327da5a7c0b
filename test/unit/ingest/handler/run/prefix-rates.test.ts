// PrefixRates through its public `run`, for the tenants that book slots: what each one books and with what
// budget, what a tenant that cannot have slots gets (the error, `outOfTurn` when others booked the schedule
// past its latest start), a report that fails (listed, outcomes unchanged, bounded), the writes a report
// counts, and pools without budgets. Small tenants, promotion and the budget cache: prefix-rates-small.
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  PrefixRates,
  releaseTimeoutMs,
  SMALL_TENANTS,
  settleMs,
} from '../../../../../lib/ingest/handler/run/prefix-rates.js';
import { PrefixWriteCounts } from '../../../../../lib/ingest/handler/run/prefix-write-counts.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { memoryBudgets, prefixOf, testConfig } from '../support.js';
import { pool, StubPool, tenant, window } from './prefix-rates-support.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('PrefixRates: the tenants that book', () => {
  it(`a tenant with ${SMALL_TENANTS.writes} writes books a slot per write in its prefix's schedule at S3_PREFIX_WRITE_RATE; one with fewer books none`, async () => {
    const budgets = memoryBudgets();
    const made: [string, number][] = [];
    const rates = new PrefixRates(
      testConfig({ POOL_CONCURRENCY: '8', S3_PREFIX_WRITE_RATE: '700' }),
      (n, c) => {
        made.push([n, c]);
        return budgets.factory(n, c);
      },
    );
    const big = tenant('big', SMALL_TENANTS.writes, pool());
    const small = tenant('small', SMALL_TENANTS.writes - 1, pool());
    const ran: string[] = [];
    const report = await rates.run([big, small], window(), async (t) => {
      ran.push(t.tenant);
      // In flight while it writes: min(POOL_CONCURRENCY, its writes) when booked.
      if (t === big) expect(t.pool.concurrency).toBe(8);
    });
    expect(ran.sort()).toEqual(['big', 'small']);
    expect(made).toEqual([[prefixOf('big'), 700]]);
    expect(budgets.books()).toEqual([
      { name: prefixOf('big'), options: expect.objectContaining({ writes: SMALL_TENANTS.writes }) },
    ]);
    // A fresh schedule books at its ceiling; a small tenant paces at nothing (0: unbooked).
    expect(report.results.get(big)).toEqual({ rate: 700 });
    expect(report.results.get(small)).toEqual({ rate: 0 });
    expect(budgets.reports()).toEqual([
      { name: prefixOf('big'), report: { accepted: 0, throttled: 0, starved: false } },
    ]);
    expect(report.reportFailures).toEqual([]);
  });

  it('a booking ends its slots by the cutoff and starts them no later than half the time left, or its own wait', async () => {
    const budgets = memoryBudgets();
    const rates = new PrefixRates(testConfig(), budgets.factory);
    const w = window(4_000);
    await rates.run(
      [tenant('a', 12, pool()), { ...tenant('b', 12, pool()), maxWaitMs: 50 }],
      w,
      async () => undefined,
    );
    const byName = Object.fromEntries(budgets.books().map((b) => [b.name, b.options]));
    expect(byName[prefixOf('a')]).toMatchObject({ writes: 12, writeBy: w.deadline, signal: w.signal });
    // Half of the 4 s left when it booked (a few ms after the window opened).
    expect(w.deadline - byName[prefixOf('a')]!.latestStart).toBeLessThanOrEqual(2_000);
    expect(w.deadline - byName[prefixOf('a')]!.latestStart).toBeGreaterThan(1_900);
    expect(byName[prefixOf('b')]!.latestStart - (w.deadline - 4_000)).toBeGreaterThanOrEqual(50);
    expect(byName[prefixOf('b')]!.latestStart - (w.deadline - 4_000)).toBeLessThan(150);
  });

  it('a tenant whose schedule others booked past its latest start is out of turn: SemaphoreTimeoutError, work never runs', async () => {
    const budgets = memoryBudgets();
    const config = testConfig();
    const ahead = await budgets.bookAhead(prefixOf('hot'), config.s3PrefixWriteRate, 60_000);
    const rates = new PrefixRates(config, budgets.factory);
    const hot = tenant('hot', 20, pool());
    const cold = tenant('cold', 20, pool());
    const ran: string[] = [];
    const report = await rates.run([hot, cold], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran).toEqual(['cold']);
    const result = report.results.get(hot);
    expect(result).toEqual({ unavailable: expect.any(SemaphoreTimeoutError), outOfTurn: true });
    expect(result).toMatchObject({ unavailable: { semaphore: prefixOf('hot'), freeAt: ahead.endsAt } });
    expect(report.results.get(cold)).toEqual({ rate: config.s3PrefixWriteRate });
  });

  it('a booking that fails is the error itself (not out of turn), or a SemaphoreTimeoutError once the window aborted', async () => {
    const budgets = memoryBudgets({
      book: (name) => {
        throw new Error(`unreachable ${name}`);
      },
    });
    const rates = new PrefixRates(testConfig(), budgets.factory);
    const a = tenant('a', 20, pool());
    const ran: string[] = [];
    const open = await rates.run([a], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(open.results.get(a)).toEqual({ unavailable: new Error(`unreachable ${prefixOf('a')}`) });

    const aborted = new AbortController();
    aborted.abort(new Error('cutoff'));
    const late = await rates.run([a], window(5_000, aborted.signal), async (t) => {
      ran.push(t.tenant);
    });
    expect(late.results.get(a)).toEqual({ unavailable: expect.any(SemaphoreTimeoutError) });
    expect(ran).toEqual([]);
  });

  it('a factory that throws makes only its tenant unavailable', async () => {
    const budgets = memoryBudgets();
    const rates = new PrefixRates(testConfig(), (name, ceiling) => {
      if (name === prefixOf('broken')) throw new Error('no table');
      return budgets.factory(name, ceiling);
    });
    const big = tenant('big', 20, pool());
    const broken = tenant('broken', 20, pool());
    const small = tenant('small', 1, pool());
    const ran: string[] = [];
    const report = await rates.run([big, broken, small], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran.sort()).toEqual(['big', 'small']);
    expect(report.results.get(broken)).toEqual({ unavailable: new Error('no table') });
    expect(report.results.get(big)).toEqual({ rate: testConfig().s3PrefixWriteRate });
    expect(report.results.get(small)).toEqual({ rate: 0 });
    expect(rates.cachedBudgets).toBe(1);
  });

  it('a report that fails is listed with its prefix; the tenant keeps its result and its work ran', async () => {
    const lost = new Error('report lost');
    const budgets = memoryBudgets({
      report: () => {
        throw lost;
      },
    });
    const rates = new PrefixRates(testConfig(), budgets.factory);
    const a = tenant('a', 20, pool());
    const ran: string[] = [];
    const report = await rates.run([a], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran).toEqual(['a']);
    expect(report.results.get(a)).toEqual({ rate: testConfig().s3PrefixWriteRate });
    expect(report.reportFailures).toEqual([{ prefix: prefixOf('a'), error: lost }]);
  });

  it('a report that never answers is abandoned after a quarter of DEADLINE_MARGIN_MS', async () => {
    const config = testConfig({ DEADLINE_MARGIN_MS: '400', WRITE_TIMEOUT_MS: '400' });
    expect(releaseTimeoutMs(config)).toBe(100);
    expect(settleMs(config)).toBe(200);
    const signals: (AbortSignal | undefined)[] = [];
    const budgets = memoryBudgets({
      report: (_name, _report, options) =>
        new Promise((_, reject) => {
          signals.push(options?.signal);
          options?.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true });
        }),
    });
    const rates = new PrefixRates(config, budgets.factory);
    const startedAt = Date.now();
    const report = await rates.run([tenant('a', 20, pool())], window(), async () => undefined);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(90);
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
    expect(report.reportFailures).toEqual([{ prefix: prefixOf('a'), error: expect.any(Error) }]);
  });

  it('the report bounds never reach 0 ms', () => {
    const config = testConfig({ DEADLINE_MARGIN_MS: '3', WRITE_TIMEOUT_MS: '3' });
    expect(releaseTimeoutMs(config)).toBe(1);
    expect(settleMs(config)).toBe(1);
  });

  it("reports the writes the store sent to the booking's own prefix, not its reads or another prefix's writes", async () => {
    const budgets = memoryBudgets();
    const counts = new PrefixWriteCounts();
    const rates = new PrefixRates(testConfig(), budgets.factory, counts);
    const p = pool();
    counts.count('t=big/r=items/before.json');
    await rates.run([tenant('big', SMALL_TENANTS.writes, p)], window(), async () => {
      // 30 attempts through the pool, one in ten a write to t=big/; every one a write to another prefix.
      for (let i = 0; i < 30; i++) {
        if (i % 10 === 0) counts.count(`t=big/r=items/${i}.json`);
        counts.count(`t=other/r=items/${i}.json`);
        await p.enqueue(async () => 'ok');
      }
    });
    counts.count('t=big/r=items/after.json');
    // Each booking reports its own round (30 attempts take more bookings than the 10 writes asked for).
    const reports = budgets.reports();
    expect(new Set(reports.map((r) => r.name))).toEqual(new Set([prefixOf('big')]));
    const summed = reports.reduce(
      (sum, r) => ({
        accepted: sum.accepted + r.report.accepted,
        throttled: sum.throttled + r.report.throttled,
      }),
      { accepted: 0, throttled: 0 },
    );
    expect(summed).toEqual({ accepted: 3, throttled: 0 });
    expect(counts.watching).toBe(0);
  });

  it('without a write count, every attempt the pool settled counts, throttled ones apart', async () => {
    const budgets = memoryBudgets();
    const rates = new PrefixRates(testConfig(), budgets.factory);
    const stub = new StubPool();
    await rates.run([tenant('big', SMALL_TENANTS.writes, stub)], window(), async () => {
      stub.succeeded();
      stub.throttled();
      stub.succeeded();
    });
    expect(budgets.reports()).toEqual([
      { name: prefixOf('big'), report: { accepted: 2, throttled: 1, starved: false } },
    ]);
    // And it stopped listening to its pool.
    expect(stub.listenerCount('pool:taskError')).toBe(0);
    expect(stub.listenerCount('pool:taskCompleted')).toBe(0);
  });

  it('lets go of every pool listener it added (warm pools are reused)', async () => {
    const budgets = memoryBudgets();
    const rates = new PrefixRates(testConfig(), budgets.factory);
    const big = tenant('big', SMALL_TENANTS.writes, pool());
    const small = tenant('small', 1, pool());
    const on = vi.spyOn(ExecutorPool.prototype, 'on');
    const off = vi.spyOn(ExecutorPool.prototype, 'off');
    for (let i = 0; i < 2; i++)
      await rates.run([big, small], window(), async (t) => {
        await t.pool.enqueue(async () => 'ok');
      });
    expect(on).toHaveBeenCalled();
    expect(off.mock.calls.map(([event]) => event).sort()).toEqual(
      on.mock.calls.map(([event]) => event).sort(),
    );
  });
});

describe('PrefixRates without budgets', () => {
  it('each pool runs at min(POOL_CONCURRENCY, its writes), at least 1, and books nothing', async () => {
    const rates = new PrefixRates(testConfig({ POOL_CONCURRENCY: '8' }), undefined);
    const a = tenant('a', 3, new StubPool());
    const b = tenant('b', 50, new StubPool());
    const c = tenant('c', 0, new StubPool());
    const ran: string[] = [];
    const report = await rates.run([a, b, c], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran.sort()).toEqual(['a', 'b', 'c']);
    expect([a, b, c].map((t) => t.pool.concurrency)).toEqual([3, 8, 1]);
    for (const t of [a, b, c]) expect(report.results.get(t)).toEqual({ rate: 0 });
    expect(report.reportFailures).toEqual([]);
    expect(rates.cachedBudgets).toBe(0);
  });
});
