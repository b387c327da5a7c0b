import { describe, expect, it } from 'vitest';
import {
  SMALL_TENANT_STRIPES,
  SMALL_TENANT_WRITES,
  TenantPermits,
} from '../../../../lib/ingest/handler/tenant-permits.js';
import { MemorySemaphore } from '../../../../lib/semaphore/memory-semaphore.js';
import type { Semaphore } from '../../../../lib/semaphore/types.js';
import { testConfig } from './support.js';

/** A tenant object as the runner hands it over: a pool stub that records its size. */
const tenant = (name: string, writes = SMALL_TENANT_WRITES) => ({
  tenant: name,
  writes,
  pool: {
    concurrency: 0,
    setConcurrency(n: number) {
      this.concurrency = n;
    },
  },
});

const window = () => ({
  deadline: Date.now() + 5_000,
  signal: new AbortController().signal,
  leaseMs: 10_000,
});

describe('TenantPermits semaphore cache', () => {
  it('keeps at most TENANT_CACHE_SIZE prefix semaphores (plus the shared one), least recently used out', async () => {
    const made: string[] = [];
    const factory = (name: string, limit: number): Semaphore => {
      made.push(name);
      return new MemorySemaphore({ name, limit });
    };
    const permits = new TenantPermits(testConfig({ TENANT_CACHE_SIZE: '3' }), factory, () => 0.5);
    const names = Array.from({ length: 50 }, (_, i) => `tenant-${i}`);
    for (const name of names) await permits.run([tenant(name)], window(), async () => undefined);
    // A shared small-tenant lease too, so both kinds are cached.
    await permits.run([tenant('small', 1)], window(), async () => undefined);
    expect(made).toHaveLength(51);

    // The oldest was evicted: it is built again.
    await permits.run([tenant('tenant-0')], window(), async () => undefined);
    expect(made).toHaveLength(52);
    expect(made.at(-1)).toBe('prefix:ignored-by-memory-store/t=tenant-0/');
    // The most recent prefixes (and the shared lease) are still cached: no new semaphore.
    await permits.run([tenant('tenant-49'), tenant('small', 1)], window(), async () => undefined);
    expect(made).toHaveLength(52);
    expect(permits.cachedSemaphores).toBe(4);
  });
});

describe('TenantPermits small tenants (issue 16)', () => {
  /** A pool stub that counts what runs through it, for the in-flight bound. */
  const countingTenant = (name: string, writes: number, gauge: { now: number; max: number }) => ({
    tenant: name,
    writes,
    pool: {
      concurrency: 0,
      setConcurrency(n: number) {
        this.concurrency = n;
      },
      async run() {
        // Writes up to the pool's concurrency at a time, like an ExecutorPool.
        for (let left = writes; left > 0; left -= this.concurrency) {
          const batch = Math.min(this.concurrency, left);
          gauge.now += batch;
          gauge.max = Math.max(gauge.max, gauge.now);
          await new Promise((resolve) => setTimeout(resolve, 2));
          gauge.now -= batch;
        }
      },
    },
  });

  it('a batch of many small tenants costs one acquire, and never has more writes in flight than it got', async () => {
    const acquires: string[] = [];
    const factory = (name: string, limit: number): Semaphore => {
      const inner = new MemorySemaphore({ name, limit: Math.min(limit, 3) });
      return {
        name,
        limit: inner.limit,
        acquire: (k, options) => {
          acquires.push(name);
          return inner.acquire(k, options);
        },
      };
    };
    const permits = new TenantPermits(testConfig({ S3_PREFIX_WRITE_RATE: '3500' }), factory, () => 0);
    const gauge = { now: 0, max: 0 };
    const tenants = Array.from({ length: 20 }, (_, i) => countingTenant(`s${i}`, 1 + (i % 3), gauge));
    const ran: string[] = [];
    const report = await permits.run(tenants, window(), async (t) => {
      ran.push(t.tenant);
      await t.pool.run();
    });
    expect(acquires).toEqual(['bucket:ignored-by-memory-store/small-tenants#0']);
    expect(ran.sort()).toEqual(tenants.map((t) => t.tenant).sort());
    expect(gauge.max).toBeLessThanOrEqual(3);
    expect(gauge.max).toBeGreaterThan(1);
    for (const t of tenants) expect(report.results.get(t)).toEqual({ permits: 3 });
  });

  it('spreads invocations over SMALL_TENANT_STRIPES semaphores, one partition key each', async () => {
    const made = new Set<string>();
    const factory = (name: string, limit: number): Semaphore => {
      made.add(name);
      return new MemorySemaphore({ name, limit });
    };
    let r = 0;
    const draws = [0, 0.5, 0.999_999];
    const permits = new TenantPermits(testConfig(), factory, () => draws[r++ % draws.length]!);
    for (let i = 0; i < 3; i++) await permits.run([tenant(`s${i}`, 1)], window(), async () => undefined);
    expect([...made].sort()).toEqual([
      `bucket:ignored-by-memory-store/small-tenants#0`,
      `bucket:ignored-by-memory-store/small-tenants#${SMALL_TENANT_STRIPES - 1}`,
      `bucket:ignored-by-memory-store/small-tenants#${SMALL_TENANT_STRIPES / 2}`,
    ]);
  });
});
