// PrefixRates' small tenants (issue 16): fewer than SMALL_TENANTS.writes writes book no slots (no DynamoDB
// call) and write in lanes, a quarter of POOL_CONCURRENCY in flight together; a SlowDown promotes a small
// tenant (its prefix's budget is cached and it books from its next batch on); the budget cache is bounded
// by TENANT_CACHE_SIZE.
import { describe, expect, it } from 'vitest';
import { PrefixRates, SMALL_TENANTS } from '../../../../../lib/ingest/handler/run/prefix-rates.js';
import { memoryBudgets, prefixOf, testConfig } from '../support.js';
import { pool, StubPool, tenant, window } from './prefix-rates-support.js';

/** Memory budgets that also record every budget the factory builds, by name. */
function recordingFactory() {
  const budgets = memoryBudgets();
  const made: string[] = [];
  const factory = (name: string, ceiling: number) => {
    made.push(name);
    return budgets.factory(name, ceiling);
  };
  return { budgets, made, factory };
}

/** A stub pool that runs a tenant's writes in rounds of its concurrency, counting writes in flight across pools. */
class CountingPool extends StubPool {
  constructor(
    private readonly writes: number,
    private readonly gauge: { now: number; max: number },
  ) {
    super();
  }
  async run(): Promise<void> {
    for (let left = this.writes; left > 0; left -= this.concurrency) {
      const batch = Math.min(this.concurrency, left);
      this.gauge.now += batch;
      this.gauge.max = Math.max(this.gauge.max, this.gauge.now);
      await new Promise((resolve) => setImmediate(resolve));
      this.gauge.now -= batch;
    }
  }
}

describe('PrefixRates small tenants', () => {
  it(`a tenant with fewer than ${SMALL_TENANTS.writes} writes books nothing: no budget built, no DynamoDB call`, async () => {
    const { budgets, made, factory } = recordingFactory();
    const rates = new PrefixRates(testConfig({ POOL_CONCURRENCY: '16' }), factory);
    const tenants = Array.from({ length: 20 }, (_, i) =>
      tenant(`s${i}`, 1 + (i % (SMALL_TENANTS.writes - 1)), new StubPool()),
    );
    const ran: string[] = [];
    const report = await rates.run(tenants, window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(made).toEqual([]);
    expect(budgets.calls).toEqual([]);
    expect(ran.sort()).toEqual(tenants.map((t) => t.tenant).sort());
    for (const t of tenants) {
      expect(report.results.get(t)).toEqual({ rate: 0 });
      // A quarter of POOL_CONCURRENCY (4) over 4 lanes: each pool at 1.
      expect(t.pool.concurrency).toBe((16 * SMALL_TENANTS.shareOfPool) / 4);
    }
  });

  it('small tenants have at most a quarter of POOL_CONCURRENCY in flight together, each pool at most its writes', async () => {
    const { factory } = recordingFactory();
    const rates = new PrefixRates(testConfig({ POOL_CONCURRENCY: '32' }), factory);
    const cap = 32 * SMALL_TENANTS.shareOfPool;
    const gauge = { now: 0, max: 0 };
    // 3 tenants: 3 lanes sharing 8, floor(8 / 3) = 2 each (never more than a tenant's writes).
    const few = [5, 1, 9].map((n, i) => tenant(`f${i}`, n, new CountingPool(n, gauge)));
    await rates.run(few, window(), (t) => t.pool.run());
    expect(few.map((t) => t.pool.concurrency)).toEqual([2, 1, 2]);
    // 30 tenants: 8 lanes at 1 each; never more than 8 writes in flight, and all of them ran.
    gauge.max = 0;
    const many = Array.from({ length: 30 }, (_, i) =>
      tenant(`s${i}`, 1 + (i % 9), new CountingPool(1 + (i % 9), gauge)),
    );
    const ran: string[] = [];
    await rates.run(many, window(), async (t) => {
      ran.push(t.tenant);
      await t.pool.run();
    });
    expect(ran).toHaveLength(30);
    expect(gauge.max).toBe(cap);
  });

  it('a small tenant S3 throttled books its prefix from its next batch on, however few its writes', async () => {
    const { budgets, factory } = recordingFactory();
    const config = testConfig();
    const rates = new PrefixRates(config, factory);
    const stub = new StubPool();
    await rates.run([tenant('spread', 2, stub)], window(), async () => {
      stub.succeeded();
      stub.throttled();
    });
    expect(budgets.books()).toEqual([]);
    expect(rates.cachedBudgets).toBe(1);

    const report = await rates.run([tenant('spread', 1, pool())], window(), async () => undefined);
    expect(budgets.books()).toEqual([
      { name: prefixOf('spread'), options: expect.objectContaining({ writes: 1 }) },
    ]);
    expect([...report.results.values()]).toEqual([{ rate: config.s3PrefixWriteRate }]);
  });

  it('a small tenant S3 never throttled stays unbooked, and stops listening to its pool after each batch', async () => {
    const { made, factory } = recordingFactory();
    const rates = new PrefixRates(testConfig(), factory);
    const stub = new StubPool();
    for (let i = 0; i < 3; i++) {
      await rates.run([tenant('quiet', 3, stub)], window(), async () => {
        stub.succeeded();
      });
    }
    expect(made).toEqual([]);
    expect(stub.listenerCount('pool:taskError')).toBe(0);
    expect(stub.listenerCount('pool:taskCompleted')).toBe(0);
  });

  it('a tenant that booked keeps booking when a later batch brings it few writes; one never large does not', async () => {
    const { budgets, factory } = recordingFactory();
    const rates = new PrefixRates(testConfig({ POOL_CONCURRENCY: '64' }), factory);
    await rates.run([tenant('hot', 40, pool())], window(), async () => undefined);
    // Later: 3 of its records come back in a mixed batch, next to a tenant never seen large.
    await rates.run([tenant('hot', 3, pool()), tenant('cold', 3, pool())], window(), async () => undefined);
    expect(budgets.books().map((b) => [b.name, b.options.writes])).toEqual([
      [prefixOf('hot'), 40],
      [prefixOf('hot'), 3],
    ]);
  });

  it('a factory that throws while promoting leaves the tenant small and its writes done', async () => {
    const rates = new PrefixRates(testConfig(), () => {
      throw new Error('no table');
    });
    const stub = new StubPool();
    const report = await rates.run([tenant('unlucky', 2, stub)], window(), async () => stub.throttled());
    expect([...report.results.values()]).toEqual([{ rate: 0 }]);
    expect(rates.cachedBudgets).toBe(0);
  });
});

describe('PrefixRates budget cache', () => {
  it('keeps at most TENANT_CACHE_SIZE prefix budgets, least recently used out', async () => {
    const { made, factory } = recordingFactory();
    const rates = new PrefixRates(testConfig({ TENANT_CACHE_SIZE: '3' }), factory);
    const large = (name: string) => tenant(name, SMALL_TENANTS.writes, new StubPool());
    for (let i = 0; i < 50; i++) await rates.run([large(`tenant-${i}`)], window(), async () => undefined);
    expect(made).toHaveLength(50);
    expect(rates.cachedBudgets).toBe(3);

    // The oldest was evicted: it is built again.
    await rates.run([large('tenant-0')], window(), async () => undefined);
    expect(made).toHaveLength(51);
    expect(made.at(-1)).toBe(prefixOf('tenant-0'));
    // The most recent prefixes are still cached: no new budget.
    await rates.run([large('tenant-49')], window(), async () => undefined);
    expect(made).toHaveLength(51);
    expect(rates.cachedBudgets).toBe(3);
  });
});
