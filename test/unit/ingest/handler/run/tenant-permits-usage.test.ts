// What TenantPermits tells the semaphores and builds them with (issue 16's adaptive limits): the S3
// attempts that succeeded and were throttled under each lease, reported with its release (an adaptive
// semaphore moves its limit by them), counted from the tenants' real pools and only while the lease is
// held; the semaphore kinds `dynamoSemaphores` builds; a tenant whose semaphore cannot be built. Issue 14's
// mutation testing found these never asserted.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LeaseResize } from '../../../../../lib/ingest/handler/run/lease-resize.js';
import { PrefixWriteCounts } from '../../../../../lib/ingest/handler/run/prefix-write-counts.js';
import {
  dynamoSemaphores,
  FIRST_LEASE_LATENCY_MS,
  IN_FLIGHT_SLACK,
  SMALL_TENANT_WRITES,
  TenantPermits,
} from '../../../../../lib/ingest/handler/run/tenant-permits.js';
import { ExecutorPool } from '../../../../../lib/pool/executor-pool.js';
import { AdaptiveDynamoSemaphore } from '../../../../../lib/semaphore/adaptive-dynamo-semaphore.js';
import { DynamoSemaphore } from '../../../../../lib/semaphore/dynamo-semaphore.js';
import { MemorySemaphore } from '../../../../../lib/semaphore/memory-semaphore.js';
import type { LeaseUsage, Semaphore } from '../../../../../lib/semaphore/types.js';
import { testConfig } from '../support.js';

const pools: ExecutorPool[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const p of pools.splice(0)) p.stop();
});

function pool(): ExecutorPool {
  const p = new ExecutorPool({ concurrency: 4, retries: 2, retryDelay: 1, maxRetryDelay: 1 });
  pools.push(p);
  return p;
}

const window = () => ({
  deadline: Date.now() + 5_000,
  signal: new AbortController().signal,
  leaseMs: 10_000,
});

const slowDown = () =>
  Object.assign(new Error('slow down'), {
    name: 'SlowDown',
    $fault: 'server',
    $metadata: { httpStatusCode: 503 },
  });

/** A report of `succeeded` and `throttled` attempts, whatever time they took and the governor kept. */
const usage = (succeeded: number, throttled: number) => ({
  succeeded,
  throttled,
  attemptMs: expect.any(Number),
  keptShare: expect.any(Number),
});

/**
 * Memory semaphores whose leases record what is reported to them, in order with the release; `lease`
 * shapes what else the leases say (the latency their grant stands for, or no `report` at all, as a static
 * semaphore's).
 */
function reportingFactory(lease: { latencyMs?: number; report?: boolean } = {}) {
  const events: { name: string; usage?: LeaseUsage; released?: true }[] = [];
  const rates = new Map<string, number | undefined>();
  const factory = (name: string, limit: number, ratePerSecond?: number): Semaphore => {
    rates.set(name, ratePerSecond);
    const inner = new MemorySemaphore({ name, limit });
    return {
      name,
      limit,
      acquire: async (k, options) => {
        const held = await inner.acquire(k, options);
        return {
          permits: held.permits,
          fence: held.fence,
          expiresAt: held.expiresAt,
          extend: (ms, o) => held.extend(ms, o),
          ...(lease.latencyMs === undefined ? {} : { latencyMs: lease.latencyMs }),
          ...(lease.report === false ? {} : { report: (usage: LeaseUsage) => events.push({ name, usage }) }),
          release: async (o) => {
            events.push({ name, released: true });
            await held.release(o);
          },
        };
      },
    };
  };
  return { factory, events, rates };
}

/**
 * Memory semaphores whose leases stand for `state` (read at each call: a resize moves it) and resize with
 * `lease.resize`; `released` is told each release before it is made.
 */
function resizingFactory(
  state: { permits: number; latencyMs: number },
  lease: { report: (usage: LeaseUsage) => void; resize: () => Promise<number>; released?: () => void },
) {
  return (name: string, limit: number): Semaphore => {
    const inner = new MemorySemaphore({ name, limit });
    return {
      name,
      limit,
      acquire: async (k, options) => {
        const held = await inner.acquire(k, options);
        return {
          get permits() {
            return state.permits;
          },
          get latencyMs() {
            return state.latencyMs;
          },
          fence: held.fence,
          expiresAt: held.expiresAt,
          extend: (ms, o) => held.extend(ms, o),
          report: lease.report,
          resize: lease.resize,
          release: async (o) => {
            lease.released?.();
            await held.release(o);
          },
        };
      },
    };
  };
}

/** One task that succeeds, and one throttled twice before its third attempt succeeds: 2 successes, 2 throttled. */
async function someWork(p: ExecutorPool): Promise<void> {
  let throttles = 0;
  await Promise.all([
    p.enqueue(async () => 'ok'),
    p.enqueue(async () => {
      if (throttles++ < 2) throw slowDown();
      return 'ok';
    }),
  ]);
}

describe('TenantPermits reports what S3 answered under each lease', () => {
  it("a large tenant's lease is told its pool's successes and throttles, before its release", async () => {
    const { factory, events } = reportingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const big = { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: pool() };
    await permits.run([big], window(), async (t) => someWork(t.pool));
    expect(events).toEqual([
      { name: 'prefix:ignored-by-memory-store/t=big/', usage: usage(2, 2) },
      { name: 'prefix:ignored-by-memory-store/t=big/', released: true },
    ]);
    // The two SlowDowns cut the pool below its grant, and the report says how far.
    const kept = events[0]!.usage!.keptShare!;
    expect(kept).toBeLessThan(0.86);
    expect(kept).toBeGreaterThan(0.5);
  });

  it('a lease whose writes are slower than its grant assumed is resized once, its pool grows, and the release comes after', async () => {
    const order: string[] = [];
    const state = { permits: 2, latencyMs: 1 };
    const factory = resizingFactory(state, {
      report: () => order.push('report'),
      resize: async () => {
        order.push('resize');
        state.permits = 4;
        state.latencyMs = 2;
        return state.permits;
      },
      released: () => order.push('release'),
    });
    const permits = new TenantPermits(testConfig(), factory);
    const p = pool();
    const big = { tenant: 'big', writes: 30, pool: p };
    const concurrency: number[] = [];
    await permits.run([big], window(), async () => {
      // Every attempt takes ~3 ms of slot, each a write: far above the 1 ms the grant stands for.
      for (let i = 0; i < 30; i++) {
        await p.enqueue(() => new Promise((resolve) => setTimeout(resolve, 3)));
        concurrency.push(p.concurrency);
      }
    });
    expect(order).toEqual(['resize', 'report', 'release']);
    expect(concurrency[0]).toBe(2);
    expect(concurrency.at(-1)).toBe(4);
  });

  it('a resize that lands once the work is done: the report keeps the share the cuts left (none), not old / new permits', async () => {
    const reports: LeaseUsage[] = [];
    const state = { permits: 2, latencyMs: 1 };
    let landing: (() => void) | undefined;
    // The resize's answer arrives only after the handler stopped watching (the work drained, the release waits).
    const stop = LeaseResize.prototype.stop;
    vi.spyOn(LeaseResize.prototype, 'stop').mockImplementation(function (this: LeaseResize) {
      const stopped = stop.call(this);
      landing?.();
      return stopped;
    });
    const factory = resizingFactory(state, {
      report: (u) => reports.push(u),
      resize: async () => {
        await new Promise<void>((resolve) => {
          landing = resolve;
        });
        state.permits = 4;
        state.latencyMs = 2;
        return state.permits;
      },
    });
    const permits = new TenantPermits(testConfig(), factory);
    const p = pool();
    await permits.run([{ tenant: 'big', writes: 10, pool: p }], window(), async () => {
      for (let i = 0; i < 10; i++) await p.enqueue(() => new Promise((resolve) => setTimeout(resolve, 3)));
    });
    expect(landing).toBeDefined();
    expect(reports).toHaveLength(1);
    // No SlowDown under the lease: nothing was cut, whatever the resize did to the permits.
    expect(reports[0]!.keptShare).toBe(1);
  });

  it("reports the writes the store sent to the lease's own prefix, and paces by slot time per write", async () => {
    // The fleet's 10 ms is per write. The pool's attempts take ~2 ms and only one in ten is a write (the
    // store saw one write to t=big/ per ten attempts): ~20 ms of slot time per write, slower than the
    // fleet's, so the pool runs at its whole grant. Per attempt it would look 5x quicker and be paced to a
    // quarter. The report carries the prefix's write count, not another prefix's writes.
    const { factory, events } = reportingFactory({ latencyMs: 10 });
    const counts = new PrefixWriteCounts();
    const permits = new TenantPermits(testConfig({ S3_PREFIX_WRITE_RATE: '200' }), factory, counts);
    const p = pool();
    const big = { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: p };
    counts.count('t=big/r=items/before.json');
    let inFlight = 0;
    await permits.run([big], window(), async () => {
      for (let i = 0; i < 30; i++) {
        if (i % 10 === 0) counts.count(`t=big/r=items/${i}.json`);
        counts.count(`t=other/r=items/${i}.json`);
        await p.enqueue(() => new Promise((resolve) => setTimeout(resolve, 2)));
      }
      inFlight = p.concurrency;
    });
    counts.count('t=big/r=items/after.json');
    expect(events[0]!.usage).toEqual({ ...usage(30, 0), writes: 3 });
    expect(inFlight).toBe(4);
    expect(counts.watching).toBe(0);
  });

  it("steers a leased pool with the lease's latency: starts spaced at the grant's rate, off at release; none without report", async () => {
    // Leases standing for 4 permits at a fleet latency of 20 ms: 200 writes/s, a start every 5 ms, at
    // the whole grant in flight however quick the answers. A lease without `report` (a static
    // semaphore's) is not governed at all: no spacing. After the release the warm pool is not spaced.
    for (const withReport of [true, false]) {
      const { factory } = reportingFactory({ latencyMs: 20, report: withReport });
      const permits = new TenantPermits(testConfig({ S3_PREFIX_WRITE_RATE: '200' }), factory);
      const p = pool();
      const big = { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: p };
      const starts: number[] = [];
      let during = { interval: Number.NaN, concurrency: Number.NaN };
      await permits.run([big], window(), async () => {
        await Promise.all(
          Array.from({ length: 10 }, () => p.enqueue(async () => starts.push(performance.now()))),
        );
        during = { interval: p.startInterval, concurrency: p.concurrency };
      });
      expect(during.concurrency).toBe(4);
      expect(p.startInterval).toBe(0);
      if (withReport) {
        expect(during.interval).toBeCloseTo(5, 9);
        // A start late by a busy loop is counted at its slot, so the next may follow sooner, but never
        // closer than half the interval, and the ten starts take at least nine intervals less that half.
        for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThan(2.4);
        expect(starts.at(-1)! - starts[0]!).toBeGreaterThan(9 * 5 - 2.5);
      } else {
        expect(during.interval).toBe(0);
      }
    }
  });

  it('counts only while the lease is held: work after it, or in a later lease, is not added', async () => {
    const { factory, events } = reportingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const big = { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: pool() };
    await permits.run([big], window(), async (t) => someWork(t.pool));
    // Between invocations: not under any lease.
    await someWork(big.pool);
    await permits.run([big], window(), async (t) => {
      await t.pool.enqueue(async () => 'ok');
    });
    expect(events.filter((e) => e.usage !== undefined).map((e) => e.usage)).toEqual([
      usage(2, 2),
      usage(1, 0),
    ]);
  });

  it('lets go of every pool listener it added once the lease is released (warm pools are reused)', async () => {
    const { factory } = reportingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const big = { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: pool() };
    const small = { tenant: 'small', writes: 1, pool: pool() };
    const on = vi.spyOn(ExecutorPool.prototype, 'on');
    const off = vi.spyOn(ExecutorPool.prototype, 'off');
    for (let i = 0; i < 2; i++) await permits.run([big, small], window(), async (t) => someWork(t.pool));
    expect(on).toHaveBeenCalled();
    expect(off.mock.calls.map(([event]) => event).sort()).toEqual(
      on.mock.calls.map(([event]) => event).sort(),
    );
  });

  it('a pool without events is reported as no attempts', async () => {
    const { factory, events } = reportingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const stub = {
      tenant: 'stub',
      writes: SMALL_TENANT_WRITES,
      pool: { concurrency: 0, setConcurrency() {} },
    };
    await permits.run([stub], window(), async () => undefined);
    expect(events[0]!.usage).toEqual({ succeeded: 0, throttled: 0, attemptMs: 0 });
  });

  it("a tenant prefix's semaphore stands for one prefix's rate; a small tenant builds none", async () => {
    const { factory, rates } = reportingFactory();
    const config = testConfig({ S3_PREFIX_WRITE_RATE: '1000' });
    const permits = new TenantPermits(config, factory);
    await permits.run(
      [
        { tenant: 'big', writes: SMALL_TENANT_WRITES, pool: pool() },
        { tenant: 'small', writes: 1, pool: pool() },
      ],
      window(),
      async () => undefined,
    );
    expect(Object.fromEntries(rates)).toEqual({ 'prefix:ignored-by-memory-store/t=big/': 1000 });
  });

  it('a large tenant whose semaphore cannot be built is unavailable; the others run', async () => {
    const { factory } = reportingFactory();
    const broken = new Error('no table');
    const permits = new TenantPermits(testConfig(), (name, limit, rate) => {
      if (name.includes('t=broken/')) throw broken;
      return factory(name, limit, rate);
    });
    const ran: string[] = [];
    const brokenTenant = { tenant: 'broken', writes: SMALL_TENANT_WRITES, pool: pool() };
    const fine = { tenant: 'fine', writes: SMALL_TENANT_WRITES, pool: pool() };
    const report = await permits.run([brokenTenant, fine], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran).toEqual(['fine']);
    expect(report.results.get(brokenTenant)).toEqual({ unavailable: broken });
    expect(report.results.get(fine)).toMatchObject({ permits: expect.any(Number) });
  });
});

describe('dynamoSemaphores', () => {
  const client = { config: {}, send: async () => ({}) } as unknown as DynamoDBClient;

  it('adaptive per tenant prefix (never under the configured rate), static for any other name', () => {
    const config = testConfig({ S3_PREFIX_WRITE_RATE: '3500' });
    const make = dynamoSemaphores(config, client, 'permits');
    const prefix = make('prefix:b/t=acme/', 70, 3500);
    expect(prefix).toBeInstanceOf(AdaptiveDynamoSemaphore);
    expect(prefix.name).toBe('prefix:b/t=acme/');
    expect(prefix.limit).toBe(3500);
    // Without a rate: the configured one.
    expect(make('prefix:b/t=globex/', 70).limit).toBe(3500);
    // A limit above the rate is kept.
    expect(make('prefix:b/t=initech/', 5000, 3500).limit).toBe(5000);
    // Sized for a first lease at a read and a write per record (its holder spaces starts at the rate).
    expect((prefix as AdaptiveDynamoSemaphore).law).toMatchObject({
      ratePerSecond: 3500,
      initialLatencyMs: FIRST_LEASE_LATENCY_MS,
      inFlightSlack: IN_FLIGHT_SLACK,
    });
    const other = make('bucket:b/exports', 280, 14000);
    expect(other).toBeInstanceOf(DynamoSemaphore);
    expect(other.limit).toBe(280);
  });

  it("'static' mode builds a static semaphore for a prefix too", () => {
    const make = dynamoSemaphores(testConfig(), client, 'permits', 'static');
    const prefix = make('prefix:b/t=acme/', 70, 3500);
    expect(prefix).toBeInstanceOf(DynamoSemaphore);
    expect(prefix.limit).toBe(70);
  });
});
