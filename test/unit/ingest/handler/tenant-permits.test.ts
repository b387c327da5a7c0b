import { describe, expect, it } from 'vitest';
import { SMALL_TENANT_WRITES, TenantPermits } from '../../../../lib/ingest/handler/tenant-permits.js';
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
