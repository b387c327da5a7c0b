import { describe, expect, it } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { MemorySemaphore, type Semaphore, withPermits } from '../../../lib/semaphore/index.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('withPermits with an ExecutorPool', () => {
  it('sizes the pool to the lease so in-flight tasks never exceed the permits, then releases', async () => {
    const sem = new MemorySemaphore({ limit: 5 });
    const other = await sem.acquire(2);
    const pool = new ExecutorPool({ concurrency: 50, retries: 0 });
    let peakActive = 0;
    pool.on('pool:taskStarted', ({ activeCount }) => {
      peakActive = Math.max(peakActive, activeCount);
    });
    const done = await withPermits(sem, pool, { want: 4 }, async (lease) => {
      expect(lease.permits).toBe(3);
      expect(pool.concurrency).toBe(3);
      expect(sem.available).toBe(0);
      const tasks = Array.from({ length: 12 }, (_, i) => pool.enqueue(() => sleep(2).then(() => i)));
      return (await Promise.all(tasks)).length;
    });
    expect(done).toBe(12);
    expect(peakActive).toBe(3);
    expect(sem.available).toBe(3);
    await other.release();
  });

  it('waits for timed-out work to return before releasing, also when the run fails', async () => {
    const sem = new MemorySemaphore({ limit: 2 });
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 5 });
    let workReturned = false;
    let availableWhileWorking: number | undefined;
    await expect(
      withPermits(sem, pool, { want: 2 }, async () => {
        // Ignores its abort signal, like an SDK call that cannot be cancelled mid-flight.
        await pool.enqueue(async () => {
          await sleep(40);
          availableWhileWorking = sem.available;
          workReturned = true;
        });
      }),
    ).rejects.toMatchObject({ name: 'TaskTimeoutError' });
    expect(workReturned).toBe(true);
    expect(availableWhileWorking).toBe(0);
    expect(sem.available).toBe(2);
  });
});

describe('withPermits when the release fails', () => {
  /** A semaphore whose leases grant `k` and whose release rejects, like DynamoDB unreachable after the work. */
  const failingRelease = () => {
    const error = Object.assign(new Error('release: connection reset'), { name: 'ECONNRESET' });
    const sem: Semaphore = {
      name: 'failing-release',
      limit: 4,
      acquire: async (k) => ({
        permits: k,
        fence: 'f',
        expiresAt: Date.now() + 60_000,
        release: () => Promise.reject(error),
        extend: async () => undefined,
      }),
    };
    return { sem, error };
  };

  it('keeps the run result and reports the release error to onReleaseError', async () => {
    const seen: unknown[] = [];
    const { sem, error } = failingRelease();
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
    const result = await withPermits(
      sem,
      pool,
      { want: 2, onReleaseError: (e) => seen.push(e) },
      async (lease) => lease.permits * 10,
    );
    expect(result).toBe(20);
    expect(seen).toEqual([error]);
  });

  it('keeps the run error (not the release error) when both fail', async () => {
    const { sem } = failingRelease();
    const pool = new ExecutorPool({ concurrency: 1, retries: 0 });
    const runError = new Error('the work failed');
    await expect(
      withPermits(sem, pool, { want: 1 }, async () => {
        throw runError;
      }),
    ).rejects.toBe(runError);
  });
});
