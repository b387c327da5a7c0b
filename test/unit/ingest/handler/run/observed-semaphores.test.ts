// The invocation's view of its semaphores: the wrapped lease must pass through everything the permit
// planner reads (a lost `latencyMs` silently turned the governor's pacing off in bench:load), and only real
// failures count as semaphore failures.
import { describe, expect, it } from 'vitest';
import {
  observeSemaphores,
  type SemaphoreObserver,
} from '../../../../../lib/ingest/handler/run/observed-semaphores.js';
import { SemaphoreTimeoutError } from '../../../../../lib/semaphore/errors.js';
import type { Lease, LeaseUsage, Semaphore } from '../../../../../lib/semaphore/types.js';

function recorder() {
  const waits: number[] = [];
  const failures: unknown[] = [];
  const observer: SemaphoreObserver = {
    permitWait: (ms) => waits.push(ms),
    semaphoreFailure: (error) => failures.push(error),
  };
  return { observer, waits, failures };
}

function semaphoreWith(lease: Lease | (() => Promise<Lease>)): Semaphore {
  return {
    name: 'prefix:b/t=a/',
    limit: 7,
    acquire: async () => (typeof lease === 'function' ? lease() : lease),
  };
}

describe('observeSemaphores', () => {
  it('passes the lease through: permits, fence, expiry, the latency its grant stands for, and the report', async () => {
    const reports: LeaseUsage[] = [];
    const inner: Lease = {
      permits: 0.75,
      fence: 'f-1',
      expiresAt: 123,
      latencyMs: 15,
      release: async () => undefined,
      extend: async () => undefined,
      report: (usage) => reports.push(usage),
    };
    const { observer, waits } = recorder();
    const semaphore = observeSemaphores(
      () => semaphoreWith(inner),
      () => observer,
    )('prefix:b/t=a/', 7);
    expect(semaphore.name).toBe('prefix:b/t=a/');
    expect(semaphore.limit).toBe(7);
    const lease = await semaphore.acquire(1);
    expect(lease).toMatchObject({ permits: 0.75, fence: 'f-1', expiresAt: 123, latencyMs: 15 });
    lease.report?.({ succeeded: 3, throttled: 1 });
    expect(reports).toEqual([{ succeeded: 3, throttled: 1 }]);
    expect(waits).toHaveLength(1);
    // A lease without a latency (a static semaphore's) has none through the wrapper either.
    const plain = await observeSemaphores(
      () => semaphoreWith({ ...inner, latencyMs: undefined }),
      () => observer,
    )('x', 1).acquire(1);
    expect(plain.latencyMs).toBeUndefined();
  });

  it('passes a resize through only for a lease that can resize, and counts a failed one as a failure', async () => {
    const boom = new Error('dynamodb down');
    const asked: LeaseUsage[] = [];
    let fail = false;
    const inner: Lease = {
      permits: 2,
      fence: 'f-3',
      expiresAt: 0,
      release: async () => undefined,
      extend: async () => undefined,
      resize: async (usage) => {
        asked.push(usage);
        if (fail) throw boom;
        return 4;
      },
    };
    const { observer, failures } = recorder();
    const wrap = (lease: Lease) =>
      observeSemaphores(
        () => semaphoreWith(lease),
        () => observer,
      )('x', 1).acquire(1);
    const lease = await wrap(inner);
    await expect(lease.resize!({ succeeded: 8, throttled: 0, attemptMs: 800 })).resolves.toBe(4);
    expect(asked).toEqual([{ succeeded: 8, throttled: 0, attemptMs: 800 }]);
    expect(failures).toEqual([]);
    fail = true;
    await expect(lease.resize!({ succeeded: 9, throttled: 0 })).rejects.toBe(boom);
    expect(failures).toEqual([boom]);
    const { resize: _, ...fixed } = inner;
    expect((await wrap(fixed)).resize).toBeUndefined();
  });

  it('a resize aborted by its signal (the cutoff, its time bound) is not a failure', async () => {
    const inner: Lease = {
      permits: 2,
      fence: 'f-4',
      expiresAt: 0,
      release: async () => undefined,
      extend: async () => undefined,
      resize: async (_usage, options) => {
        throw options?.signal?.reason;
      },
    };
    const { observer, failures } = recorder();
    const lease = await observeSemaphores(
      () => semaphoreWith(inner),
      () => observer,
    )('x', 1).acquire(1);
    const cutoff = new AbortController();
    cutoff.abort(new Error('cutoff'));
    await expect(
      lease.resize!({ succeeded: 8, throttled: 0, attemptMs: 800 }, { signal: cutoff.signal }),
    ).rejects.toMatchObject({ name: 'Error', message: 'cutoff' });
    expect(failures).toEqual([]);
  });

  it('counts a failed release or acquire as a failure, running out of time as none', async () => {
    const boom = new Error('dynamodb down');
    const inner: Lease = {
      permits: 1,
      fence: 'f-2',
      expiresAt: 0,
      release: async () => {
        throw boom;
      },
      extend: async () => undefined,
    };
    const { observer, failures } = recorder();
    const lease = await observeSemaphores(
      () => semaphoreWith(inner),
      () => observer,
    )('x', 1).acquire(1);
    await expect(lease.release()).rejects.toBe(boom);
    const timedOut = observeSemaphores(
      () => semaphoreWith(() => Promise.reject(new SemaphoreTimeoutError('x', 1, 0))),
      () => observer,
    )('x', 1);
    await expect(timedOut.acquire(1)).rejects.toBeInstanceOf(SemaphoreTimeoutError);
    expect(failures).toEqual([boom]);
  });
});
