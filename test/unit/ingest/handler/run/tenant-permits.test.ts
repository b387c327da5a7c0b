import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { SMALL_TENANT_WRITES, TenantPermits } from '../../../../../lib/ingest/handler/run/tenant-permits.js';
import { MemorySemaphore } from '../../../../../lib/semaphore/memory-semaphore.js';
import type { Semaphore } from '../../../../../lib/semaphore/types.js';
import { testConfig } from '../support.js';

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
  it('keeps at most TENANT_CACHE_SIZE prefix semaphores, least recently used out', async () => {
    const made: string[] = [];
    const factory = (name: string, limit: number): Semaphore => {
      made.push(name);
      return new MemorySemaphore({ name, limit });
    };
    const permits = new TenantPermits(testConfig({ TENANT_CACHE_SIZE: '3' }), factory);
    const names = Array.from({ length: 50 }, (_, i) => `tenant-${i}`);
    for (const name of names) await permits.run([tenant(name)], window(), async () => undefined);
    expect(made).toHaveLength(50);
    expect(permits.cachedSemaphores).toBe(3);

    // The oldest was evicted: it is built again.
    await permits.run([tenant('tenant-0')], window(), async () => undefined);
    expect(made).toHaveLength(51);
    expect(made.at(-1)).toBe('prefix:ignored-by-memory-store/t=tenant-0/');
    // The most recent prefixes are still cached: no new semaphore.
    await permits.run([tenant('tenant-49')], window(), async () => undefined);
    expect(made).toHaveLength(51);
    expect(permits.cachedSemaphores).toBe(3);
  });
});

/** A pool stub with the events an ExecutorPool emits, so a test can play S3's answers through it. */
class EventfulPool extends EventEmitter {
  concurrency = 0;
  setConcurrency(n: number) {
    this.concurrency = n;
  }
  throttled() {
    const error = Object.assign(new Error('Please reduce your request rate.'), {
      name: 'SlowDown',
      $metadata: { httpStatusCode: 503 },
    });
    this.emit('pool:taskError', { id: 1, attempt: 1, error, willRetry: true, durationMs: 20 });
  }
  succeeded() {
    this.emit('pool:taskCompleted', { id: 1, attempt: 1, queueWaitMs: 0, durationMs: 20 });
  }
}

describe('TenantPermits small tenants (issue 16)', () => {
  const recordingFactory = () => {
    const made: string[] = [];
    const acquires: string[] = [];
    const factory = (name: string, limit: number): Semaphore => {
      made.push(name);
      const inner = new MemorySemaphore({ name, limit });
      return {
        name,
        limit: inner.limit,
        acquire: (k, options) => {
          acquires.push(name);
          return inner.acquire(k, options);
        },
      };
    };
    return { made, acquires, factory };
  };

  it(`a tenant with fewer than ${SMALL_TENANT_WRITES} writes takes no lease: no DynamoDB write for it`, async () => {
    const { made, acquires, factory } = recordingFactory();
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '16' }), factory);
    const tenants = Array.from({ length: 20 }, (_, i) =>
      tenant(`s${i}`, 1 + (i % (SMALL_TENANT_WRITES - 1))),
    );
    const ran: string[] = [];
    const report = await permits.run(tenants, window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(acquires).toEqual([]);
    expect(made).toEqual([]);
    expect(ran.sort()).toEqual(tenants.map((t) => t.tenant).sort());
    for (const t of tenants) {
      expect(report.results.get(t)).toEqual({ permits: 0 });
      // A quarter of POOL_CONCURRENCY (4) over 4 lanes: each pool at 1.
      expect(t.pool.concurrency).toBe(1);
    }
  });

  it('small tenants have at most a quarter of POOL_CONCURRENCY in flight together, each pool at most its writes', async () => {
    const { factory } = recordingFactory();
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '32' }), factory);
    const gauge = { now: 0, max: 0 };
    const counting = (name: string, writes: number) => ({
      tenant: name,
      writes,
      pool: {
        concurrency: 0,
        setConcurrency(n: number) {
          this.concurrency = n;
        },
        async run() {
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
    // 3 tenants: 3 lanes sharing 8 permits, 2 each (never more than a tenant's writes).
    const few = [counting('a', 5), counting('b', 1), counting('c', 9)];
    await permits.run(few, window(), (t) => t.pool.run());
    expect(few.map((t) => t.pool.concurrency)).toEqual([2, 1, 2]);
    // 30 tenants: 8 lanes at 1 each; never more than 8 writes in flight, and all of them ran.
    gauge.max = 0;
    const many = Array.from({ length: 30 }, (_, i) => counting(`s${i}`, 1 + (i % 9)));
    const ran: string[] = [];
    await permits.run(many, window(), async (t) => {
      ran.push(t.tenant);
      await t.pool.run();
    });
    expect(ran).toHaveLength(30);
    expect(gauge.max).toBe(8);
  });

  it('a small tenant S3 throttled takes its prefix lease from its next batch on, however few its writes', async () => {
    const { acquires, factory } = recordingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const pool = new EventfulPool();
    const small = { tenant: 'spread', writes: 2, pool };
    await permits.run([small], window(), async () => {
      pool.succeeded();
      pool.throttled();
    });
    expect(acquires).toEqual([]);

    const report = await permits.run([{ ...small, writes: 1 }], window(), async () => undefined);
    expect(acquires).toEqual(['prefix:ignored-by-memory-store/t=spread/']);
    expect([...report.results.values()]).toEqual([{ permits: 1 }]);
  });

  it('a small tenant S3 never throttled stays without a lease', async () => {
    const { acquires, factory } = recordingFactory();
    const permits = new TenantPermits(testConfig(), factory);
    const pool = new EventfulPool();
    const small = { tenant: 'quiet', writes: 3, pool };
    for (let i = 0; i < 3; i++) {
      await permits.run([small], window(), async () => {
        pool.succeeded();
      });
    }
    expect(acquires).toEqual([]);
    // And it stopped listening to its pool after each batch.
    expect(pool.listenerCount('pool:taskError')).toBe(0);
    expect(pool.listenerCount('pool:taskCompleted')).toBe(0);
  });

  it('a factory that throws while promoting leaves the tenant small and its writes done', async () => {
    const permits = new TenantPermits(testConfig(), () => {
      throw new Error('no table');
    });
    const pool = new EventfulPool();
    const small = { tenant: 'unlucky', writes: 2, pool };
    const report = await permits.run([small], window(), async () => pool.throttled());
    expect([...report.results.values()]).toEqual([{ permits: 0 }]);
    expect(permits.cachedSemaphores).toBe(0);
  });
});
