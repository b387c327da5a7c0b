// PrefixRates for a sharded tenant (docs/fleet-cap.md, "Sharded resources"; docs/decisions/
// striped-shard-budgets.md): a holder whose writes all go to sharded resources books one stripe of its
// tenant's budget (each new stripe at its share of S3_PREFIX_WRITE_RATE), picked at random (a second one when
// the first is booked past the holder's wait); a holder with an unsharded write books its
// tenant prefix; a stripe booked past a holder's wait fails that holder only; a small sharded tenant S3
// throttled is promoted; the budget cache holds a tenant's stripes.
import { describe, expect, it } from 'vitest';
import { PrefixRates, SMALL_TENANTS } from '../../../../../lib/ingest/handler/run/prefix-rates.js';
import { stripeBudgetName, stripeCount } from '../../../../../lib/ingest/handler/run/shard-stripes.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { memoryBudgets, prefixOf, testConfig } from '../support.js';
import { pool, StubPool, tenant, window } from './prefix-rates-support.js';

const BUCKET = 'ignored-by-memory-store';
const stripeOf = (t: string, stripe: number, stripes: number) => stripeBudgetName(BUCKET, t, stripe, stripes);
/** `orders` over 8 shards, `customers` over 4: the stripes are 4, the fewest. */
const SHARDED = { RESOURCE_SHARDS: '{"orders":8,"customers":4}', S3_PREFIX_WRITE_RATE: '700' };
/** A random source that returns `values` in turn. */
const cycling = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};
const writing = (name: string, writes: number, resources: string[]) => ({
  ...tenant(name, writes, pool()),
  resources,
});

describe('PrefixRates: sharded tenants book stripes', () => {
  it('the stripes are the fewest shards of any sharded resource; none when nothing is sharded', () => {
    expect(stripeCount(testConfig(SHARDED))).toBe(4);
    expect(stripeCount(testConfig({ RESOURCE_SHARDS: '{"orders":16}' }))).toBe(16);
    expect(stripeCount(testConfig())).toBe(0);
  });

  it('a tenant writing only sharded resources books the stripe `random` picks, each new stripe at its share of one prefix; one with an unsharded write books its prefix', async () => {
    const budgets = memoryBudgets();
    const made: [string, number, number | undefined][] = [];
    const rates = new PrefixRates(
      testConfig({ ...SHARDED, RESOURCE_SHARDS: '{"orders":8}' }),
      (n, c, start) => {
        made.push([n, c, start]);
        return budgets.factory(n, c, start);
      },
      undefined,
      cycling(0.99, 0.3),
    );
    const whale = writing('whale', 20, ['orders']);
    const mixed = writing('mixed', 20, ['orders', 'customers']);
    const report = await rates.run([whale, mixed], window(), async () => undefined);
    // Every stripe of the whale's budget is built (a holder may land in any); only the one picked is booked.
    // A new stripe starts at 1/8 of S3_PREFIX_WRITE_RATE: the 8 together start inside one prefix's limit,
    // where S3 keeps a tenant's fresh shard prefixes until it partitions them.
    expect(made.sort()).toEqual(
      [
        [prefixOf('mixed'), 700, undefined],
        ...[0, 1, 2, 3, 4, 5, 6, 7].map((s) => [stripeOf('whale', s, 8), 700, 700 / 8]),
      ].sort(),
    );
    expect(budgets.books().map((b) => b.name)).toContain(stripeOf('whale', 7, 8));
    expect(report.results.get(whale)).toEqual({ rate: 700 / 8 });
    expect(report.results.get(mixed)).toEqual({ rate: 700 });
    // The next holder of the whale picks again: 0.3 of 8 stripes is stripe 2.
    await rates.run([writing('whale', 20, ['orders'])], window(), async () => undefined);
    expect(budgets.books().map((b) => b.name)).toContain(stripeOf('whale', 2, 8));
    expect(budgets.table.item(prefixOf('whale'))).toBeUndefined();
  });

  it("holders spread over the stripes: each stripe's item carries its share of the tenant's bookings", async () => {
    const perStripe = new Map<string, number>();
    const budgets = memoryBudgets({
      booked: (name) => void perStripe.set(name, (perStripe.get(name) ?? 0) + 1),
    });
    const rates = new PrefixRates(
      testConfig(SHARDED),
      budgets.factory,
      undefined,
      cycling(0, 0.25, 0.5, 0.75),
    );
    for (let i = 0; i < 8; i++)
      await rates.run([writing('whale', 12, ['orders', 'customers'])], window(), async () => undefined);
    // Bookings that landed (the tries of a busy stripe book nothing).
    expect(perStripe).toEqual(new Map([0, 1, 2, 3].map((s) => [stripeOf('whale', s, 4), 2])));
  });

  it("a sharded tenant's round needs MIN_ROUND_WRITES writes to each of its stripes' shards before its share steps the schedule", async () => {
    // 4 refused of 10 writes: one shard prefix out of tokens. An unsharded holder's round is judged there
    // (its one prefix refused 40%); a holder over 4 shards sent that prefix a quarter of them.
    const play = (stub: StubPool) => {
      for (let i = 0; i < 10; i++) {
        if (i % 3 === 0) stub.throttled();
        else stub.succeeded();
      }
    };
    const run = async (resources: string[]) => {
      const budgets = memoryBudgets();
      const rates = new PrefixRates(testConfig(SHARDED), budgets.factory, undefined, () => 0);
      const stub = new StubPool();
      await rates.run([{ ...tenant('whale', 10, stub), resources }], window(), async () => play(stub));
      return budgets.reports().map((r) => r.report);
    };
    // Striped: no step within the booking; its report is the whole round.
    expect(await run(['orders'])).toEqual([{ accepted: 6, throttled: 4, starved: false }]);
    // Its tenant prefix (an unsharded resource among its writes): stepped at the 10th write, nothing left.
    expect(await run(['orders', 'unsharded'])).toEqual([{ accepted: 0, throttled: 0, starved: false }]);
  });

  it("a stripe booked past the holder's wait is passed over: the holder books a second stripe picked at random", async () => {
    const budgets = memoryBudgets();
    const config = testConfig(SHARDED);
    await budgets.bookAhead(stripeOf('whale', 0, 4), config.s3PrefixWriteRate, 60_000);
    const rates = new PrefixRates(config, budgets.factory, undefined, () => 0);
    const report = await rates.run(
      [{ ...writing('whale', 20, ['orders']), maxWaitMs: 100 }],
      window(),
      async () => undefined,
    );
    expect([...report.results.values()]).toEqual([{ rate: config.s3PrefixWriteRate / 4 }]);
    const holder = budgets.books().filter((b) => b.options.writes === 20);
    expect(holder.map((b) => b.name)).toEqual([stripeOf('whale', 0, 4), stripeOf('whale', 1, 4)]);
  });

  it('both stripes tried booked past its wait fail only that holder; a tenant with a free stripe writes', async () => {
    const budgets = memoryBudgets();
    const config = testConfig(SHARDED);
    for (const s of [0, 1, 2, 3])
      await budgets.bookAhead(stripeOf('whale', s, 4), config.s3PrefixWriteRate, 60_000);
    // Two containers of the fleet, each with its own PrefixRates, over one table.
    const first = new PrefixRates(config, budgets.factory, undefined, () => 0);
    const second = new PrefixRates(config, budgets.factory, undefined, () => 0.5);
    const blocked = writing('whale', 20, ['orders']);
    const free = writing('minnow', 20, ['orders']);
    const ran: unknown[] = [];
    const [a, b] = await Promise.all([
      first.run([{ ...blocked, maxWaitMs: 100 }], window(), async (t) => void ran.push(t)),
      second.run([{ ...free, maxWaitMs: 100 }], window(), async (t) => void ran.push(t)),
    ]);
    const blockedResult = [...a.results.values()][0]!;
    expect(blockedResult).toMatchObject({ outOfTurn: true });
    expect('unavailable' in blockedResult && blockedResult.unavailable).toBeInstanceOf(SemaphoreTimeoutError);
    expect([...b.results.values()]).toEqual([{ rate: config.s3PrefixWriteRate / 4 }]);
    expect(ran).toHaveLength(1);
  });

  it('a small sharded tenant S3 throttled is promoted: it books a stripe from its next batch on', async () => {
    const budgets = memoryBudgets();
    const made: string[] = [];
    const rates = new PrefixRates(
      testConfig({ RESOURCE_SHARDS: '{"orders":4}' }),
      (n, c) => {
        made.push(n);
        return budgets.factory(n, c);
      },
      undefined,
      () => 0.6,
    );
    const stub = new StubPool();
    await rates.run([{ ...tenant('spread', 2, stub), resources: ['orders'] }], window(), async () => {
      stub.throttled();
    });
    expect(budgets.books()).toEqual([]);
    expect(made).toEqual([stripeOf('spread', 0, 4)]);
    await rates.run([writing('spread', 1, ['orders'])], window(), async () => undefined);
    expect(budgets.books().map((b) => [b.name, b.options.writes])).toEqual([[stripeOf('spread', 2, 4), 1]]);
    // Its prefix (unsharded `customers`) was never throttled: a batch writing there stays small.
    await rates.run([writing('spread', 1, ['orders', 'customers'])], window(), async () => undefined);
    expect(budgets.books()).toHaveLength(1);
  });

  it('a sharded tenant that booked keeps booking when a later batch brings it few writes, whatever stripe it booked', async () => {
    const budgets = memoryBudgets();
    const rates = new PrefixRates(testConfig(SHARDED), budgets.factory, undefined, cycling(0.9, 0.6));
    await rates.run([writing('whale', 40, ['orders'])], window(), async () => undefined);
    await rates.run(
      [writing('whale', 3, ['orders']), writing('cold', 3, ['orders'])],
      window(),
      async () => undefined,
    );
    expect(budgets.books().map((b) => [b.name, b.options.writes])).toEqual([
      [stripeOf('whale', 3, 4), 40],
      [stripeOf('whale', 2, 4), 3],
    ]);
  });

  it('caches up to TENANT_CACHE_SIZE x stripes budgets', async () => {
    const budgets = memoryBudgets();
    let i = 0;
    const rates = new PrefixRates(
      testConfig({ ...SHARDED, TENANT_CACHE_SIZE: '2' }),
      budgets.factory,
      undefined,
      () => (i++ % 4) / 4,
    );
    for (let n = 0; n < 12; n++) {
      await rates.run(
        [writing(`t-${n % 3}`, SMALL_TENANTS.writes, ['orders'])],
        window(),
        async () => undefined,
      );
    }
    expect(rates.cachedBudgets).toBe(8);
  });
});
