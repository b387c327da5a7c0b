// TenantPermits through its public `run`: what each tenant asks for, how a shared small-tenant lease is split
// over its pools, how acquire and release failures are kept apart, and the give-back bound. Issue 14's
// mutation testing found `n / pools` vs `n * pools` unobservable with the handler tests' limits.
import { describe, expect, it } from 'vitest';
import {
  LEAST_USEFUL_LEASE_MS,
  PREFIX_ACQUIRE_BACKOFF_CAP_MS,
  releaseTimeoutMs,
  SMALL_TENANT_WRITES,
  settleMs,
  TenantPermits,
} from '../../../../../lib/ingest/handler/run/tenant-permits.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import { MemorySemaphore } from '../../../../../lib/semaphore/memory-semaphore.js';
import type {
  AcquireOptions,
  Lease,
  LeaseCallOptions,
  Semaphore,
} from '../../../../../lib/semaphore/types.js';
import { testConfig } from '../support.js';

/** A tenant object as the runner hands it over: a pool stub that records its sizes and drains. */
function tenant(name: string, writes: number, events: string[] = []) {
  return {
    tenant: name,
    writes,
    pool: {
      concurrency: 0,
      setConcurrency(n: number) {
        this.concurrency = n;
        events.push(`size ${name} ${n}`);
      },
      async drain() {
        events.push(`drain ${name}`);
      },
    },
  };
}

const window = (signal = new AbortController().signal) => ({
  deadline: Date.now() + 5_000,
  signal,
  leaseMs: 10_000,
});

interface Acquire {
  readonly name: string;
  readonly k: number;
  readonly options: AcquireOptions | undefined;
}

/** Memory semaphores of at most `cap` permits that record every acquire and release. */
function recordingFactory(cap = Number.POSITIVE_INFINITY, events: string[] = []) {
  const acquires: Acquire[] = [];
  const limits = new Map<string, number>();
  const factory = (name: string, limit: number): Semaphore => {
    limits.set(name, limit);
    const inner = new MemorySemaphore({ name, limit: Math.min(limit, cap) });
    return {
      name,
      limit: inner.limit,
      acquire: async (k, options) => {
        acquires.push({ name, k, options });
        const lease = await inner.acquire(k, options);
        return {
          permits: lease.permits,
          fence: lease.fence,
          expiresAt: lease.expiresAt,
          extend: (ms, o) => lease.extend(ms, o),
          release: async (o) => {
            events.push(`release ${name}`);
            await lease.release(o);
          },
        };
      },
    };
  };
  return { factory, acquires, limits };
}

/** Semaphores that grant every request in full, with leases released by `release`. */
const grantingAll =
  (release: (options?: LeaseCallOptions) => Promise<void>) =>
  (name: string, limit: number): Semaphore => ({
    name,
    limit,
    acquire: async (k): Promise<Lease> => ({
      permits: k,
      fence: 'f',
      expiresAt: Date.now() + 1_000,
      extend: async () => undefined,
      release,
    }),
  });

const prefixOf = (t: string) => `prefix:ignored-by-memory-store/t=${t}/`;

describe('TenantPermits: what each tenant asks for', () => {
  it(`a tenant with ${SMALL_TENANT_WRITES} writes has its own prefix lease; one with fewer has none`, async () => {
    const { factory, acquires, limits } = recordingFactory();
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '8' }), factory);
    const big = tenant('big', SMALL_TENANT_WRITES);
    const small = tenant('small', SMALL_TENANT_WRITES - 1);
    const ran: string[] = [];
    const report = await permits.run([big, small], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran.sort()).toEqual(['big', 'small']);
    expect(permits.prefixLimit).toBe(70); // 3,500 PUT/s x 20 ms
    expect(limits).toEqual(new Map([[prefixOf('big'), 70]]));
    // big: min(prefix limit, POOL_CONCURRENCY, writes) = 8, any grant from 1; small: no lease.
    expect(acquires.map((a) => [a.name, a.k, a.options?.min])).toEqual([[prefixOf('big'), 8, 1]]);
    expect(acquires[0]!.options).toMatchObject({ leaseMs: 10_000 });
    expect(report.results.get(big)).toEqual({ permits: 8 });
    expect(report.results.get(small)).toEqual({ permits: 0 });
    expect(big.pool.concurrency).toBe(8);
    // A small tenant: at most a quarter of POOL_CONCURRENCY (2) with the other small tenants.
    expect(small.pool.concurrency).toBe(2);
    expect(report.releaseFailures).toEqual([]);
  });

  it('a tenant that had its own prefix lease keeps it when a later batch brings it few writes', async () => {
    const { factory, acquires } = recordingFactory();
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '64' }), factory);
    await permits.run([tenant('hot', 40)], window(), async () => undefined);
    // Later: 3 of its records come back in a mixed batch, next to a tenant never seen large.
    await permits.run([tenant('hot', 3), tenant('cold', 3)], window(), async () => undefined);
    expect(acquires.map((a) => [a.name, a.k])).toEqual([
      [prefixOf('hot'), 40],
      [prefixOf('hot'), 3],
    ]);
  });

  it('a large tenant asks for no more than its writes, and its pool is sized to the grant', async () => {
    const { factory, acquires } = recordingFactory(5);
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '64' }), factory);
    const a = tenant('a', 12);
    const report = await permits.run([a], window(), async () => undefined);
    // Asked min(70, 64, 12) = 12, capped by the semaphore's 5.
    expect(acquires.map((x) => [x.k, x.options?.min])).toEqual([[5, 1]]);
    expect(report.results.get(a)).toEqual({ permits: 5 });
    expect(a.pool.concurrency).toBe(5);
  });

  it(`stops waiting for permits ${LEAST_USEFUL_LEASE_MS} ms before the cutoff, or a quarter of a shorter window before it`, async () => {
    const { factory, acquires } = recordingFactory(5);
    const permits = new TenantPermits(testConfig(), factory);
    const long = { ...window(), deadline: Date.now() + 5_000 };
    const before = Date.now();
    await permits.run([tenant('a', 12)], long, async () => undefined);
    expect(acquires[0]!.options?.deadline).toBe(long.deadline - LEAST_USEFUL_LEASE_MS);
    // 400 ms left: it waits 300 of them at most (a quarter short of the cutoff).
    const short = { ...window(), deadline: Date.now() + 400 };
    await permits.run([tenant('b', 12)], short, async () => undefined);
    const deadline = acquires[1]!.options?.deadline ?? 0;
    expect(short.deadline - deadline).toBeGreaterThanOrEqual(0);
    expect(short.deadline - deadline).toBeLessThanOrEqual(100);
    expect(short.deadline - deadline).toBeGreaterThan(90 - (Date.now() - before));
    // A window already past: the cutoff itself.
    const past = { ...window(), deadline: Date.now() - 10 };
    await permits.run([tenant('c', 12)], past, async () => undefined);
    expect(acquires[2]!.options?.deadline).toBe(past.deadline);
  });

  it('a tenant whose records were received more often polls for its permits more often', async () => {
    const { factory, acquires } = recordingFactory(5);
    const permits = new TenantPermits(testConfig(), factory);
    await permits.run([tenant('a', 12)], window(), async () => undefined);
    await permits.run([{ ...tenant('b', 12), receives: 4 }], window(), async () => undefined);
    await permits.run([{ ...tenant('c', 12), receives: 0 }], window(), async () => undefined);
    expect(acquires.map((a) => a.options?.backoffCapMs)).toEqual([
      PREFIX_ACQUIRE_BACKOFF_CAP_MS,
      PREFIX_ACQUIRE_BACKOFF_CAP_MS / 4,
      PREFIX_ACQUIRE_BACKOFF_CAP_MS,
    ]);
  });

  it('a leased tenant tells the semaphore how many writes it will make (its holder entry says when it is due)', async () => {
    const { factory, acquires } = recordingFactory(5);
    const permits = new TenantPermits(testConfig(), factory);
    await permits.run([tenant('a', 12), tenant('b', 40)], window(), async () => undefined);
    expect(acquires.map((a) => a.options?.requests).sort((x, y) => (x ?? 0) - (y ?? 0))).toEqual([12, 40]);
  });

  it('without a semaphore factory each pool runs at min(POOL_CONCURRENCY, its writes), at least 1', async () => {
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '8' }), undefined);
    const a = tenant('a', 3);
    const b = tenant('b', 50);
    const c = tenant('c', 0);
    const ran: string[] = [];
    const report = await permits.run([a, b, c], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran.sort()).toEqual(['a', 'b', 'c']);
    expect([a, b, c].map((t) => t.pool.concurrency)).toEqual([3, 8, 1]);
    for (const t of [a, b, c]) expect(report.results.get(t)).toEqual({ permits: 0 });
  });
});

describe('TenantPermits: the steps of a lease kept apart', () => {
  it('sizes, runs, drains, then releases, in that order', async () => {
    const events: string[] = [];
    const { factory } = recordingFactory(Number.POSITIVE_INFINITY, events);
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '4' }), factory);
    const a = tenant('a', 20, events);
    await permits.run([a], window(), async () => {
      events.push('work a');
    });
    expect(events).toEqual(['size a 4', 'work a', 'drain a', `release ${prefixOf('a')}`]);
  });

  it('a failed acquire is the error itself, or a SemaphoreTimeoutError once the window aborted; work never runs', async () => {
    const failing = (name: string, limit: number): Semaphore => ({
      name,
      limit,
      acquire: async () => {
        throw new Error(`unreachable ${name}`);
      },
    });
    const permits = new TenantPermits(testConfig(), failing);
    const a = tenant('a', 20);
    const ran: string[] = [];
    const open = await permits.run([a], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(open.results.get(a)).toEqual({ unavailable: new Error(`unreachable ${prefixOf('a')}`) });

    const aborted = new AbortController();
    aborted.abort(new Error('cutoff'));
    const late = await permits.run([a], window(aborted.signal), async (t) => {
      ran.push(t.tenant);
    });
    const result = late.results.get(a);
    expect(result && 'unavailable' in result && result.unavailable).toBeInstanceOf(SemaphoreTimeoutError);
    expect(ran).toEqual([]);
  });

  it('a factory that throws makes only its tenants unavailable', async () => {
    const inner = recordingFactory();
    const factory = (name: string, limit: number): Semaphore => {
      if (name === prefixOf('broken')) throw new Error('no table');
      return inner.factory(name, limit);
    };
    const permits = new TenantPermits(testConfig(), factory);
    const big = tenant('big', 20);
    const broken = tenant('broken', 20);
    const small = tenant('small', 1);
    const ran: string[] = [];
    const report = await permits.run([big, broken, small], window(), async (t) => {
      ran.push(t.tenant);
    });
    expect(ran.sort()).toEqual(['big', 'small']);
    expect(report.results.get(broken)).toEqual({ unavailable: new Error('no table') });
    expect(report.results.get(big)).toMatchObject({ permits: 8 });
    expect(report.results.get(small)).toEqual({ permits: 0 });
  });

  it('a release that fails is reported with its semaphore and leaves the grant in place', async () => {
    const failingRelease = grantingAll(async () => {
      throw new Error('release lost');
    });
    const permits = new TenantPermits(testConfig({ POOL_CONCURRENCY: '8' }), failingRelease);
    const a = tenant('a', 20);
    const report = await permits.run([a], window(), async () => undefined);
    expect(report.results.get(a)).toEqual({ permits: 8 });
    expect(report.releaseFailures).toEqual([{ semaphore: prefixOf('a'), error: new Error('release lost') }]);
  });

  it('a release that never answers is abandoned after a quarter of DEADLINE_MARGIN_MS', async () => {
    const config = testConfig({ DEADLINE_MARGIN_MS: '400', WRITE_TIMEOUT_MS: '400' });
    expect(releaseTimeoutMs(config)).toBe(100);
    expect(settleMs(config)).toBe(200);
    const signals: (AbortSignal | undefined)[] = [];
    const stalled = grantingAll(
      (options) =>
        new Promise((_, reject) => {
          signals.push(options?.signal);
          options?.signal?.addEventListener('abort', () => reject(options.signal?.reason), { once: true });
        }),
    );
    const permits = new TenantPermits(config, stalled);
    const startedAt = Date.now();
    const report = await permits.run([tenant('a', 20)], window(), async () => undefined);
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(90);
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
    expect(report.releaseFailures).toHaveLength(1);
  });

  it('give-back bounds never reach 0 ms', () => {
    const config = testConfig({ DEADLINE_MARGIN_MS: '3', WRITE_TIMEOUT_MS: '3' });
    expect(releaseTimeoutMs(config)).toBe(1);
    expect(settleMs(config)).toBe(1);
  });
});
