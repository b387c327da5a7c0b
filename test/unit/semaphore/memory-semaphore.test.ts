import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  InvalidPermitRequestError,
  InvalidSemaphoreOptionsError,
  type Lease,
  LeaseLostError,
  MemorySemaphore,
  SemaphoreTimeoutError,
} from '../../../lib/semaphore/index.js';
import { type HoldInterval, peakHeld } from '../../integration/semaphore/support/timeline.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('MemorySemaphore', () => {
  it('grants between min and k, never more than are free', async () => {
    const sem = new MemorySemaphore({ limit: 5 });
    const a = await sem.acquire(3);
    const b = await sem.acquire(4, { min: 1 });
    expect([a.permits, b.permits, sem.available]).toEqual([3, 2, 0]);
    await a.release();
    await a.release();
    expect(sem.available).toBe(3);
    await b.release();
    expect(sem.available).toBe(5);
  });

  it('wakes waiters on release in arrival order; a waiting large request is not overtaken', async () => {
    const sem = new MemorySemaphore({ limit: 4 });
    const held = await sem.acquire(3);
    const order: string[] = [];
    const big = sem.acquire(3).then((l) => {
      order.push('big');
      return l;
    });
    const small = sem.acquire(1).then((l) => {
      order.push('small');
      return l;
    });
    await Promise.resolve();
    expect(order).toEqual([]); // 1 free, but `big` is first in line
    await held.release();
    const [bigLease, smallLease] = await Promise.all([big, small]);
    expect(order).toEqual(['big', 'small']);
    expect(bigLease.permits + smallLease.permits).toBe(4);
  });

  it('rejects at the deadline with SemaphoreTimeoutError, holding nothing, and lets the queue move on', async () => {
    vi.useFakeTimers();
    const sem = new MemorySemaphore({ limit: 2 });
    const held = await sem.acquire(1);
    const blocked = sem.acquire(2, { deadline: Date.now() + 500 });
    const behind = sem.acquire(1, { deadline: Date.now() + 10_000 });
    const outcome = expect(blocked).rejects.toMatchObject({ name: 'SemaphoreTimeoutError', min: 2 });
    await vi.advanceTimersByTimeAsync(500);
    await outcome;
    expect((await behind).permits).toBe(1);
    expect(sem.available).toBe(0);
    await held.release();
    expect(sem.available).toBe(1);
  });

  it('rejects with the abort reason and holds nothing', async () => {
    const sem = new MemorySemaphore({ limit: 1 });
    const held = await sem.acquire(1);
    const controller = new AbortController();
    const pending = sem.acquire(1, { signal: controller.signal });
    const reason = new Error('stop');
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    await expect(sem.acquire(1, { signal: controller.signal })).rejects.toBe(reason);
    await held.release();
    expect(sem.available).toBe(1);
  });

  it('reclaims an expired lease for a waiter; the stale lease then frees nothing and cannot extend', async () => {
    vi.useFakeTimers();
    const sem = new MemorySemaphore({ limit: 2, leaseMs: 1_000 });
    const stale = await sem.acquire(2);
    expect(stale.expiresAt).toBe(Date.now() + 1_000);
    const waiting = sem.acquire(2, { leaseMs: 60_000 });
    await vi.advanceTimersByTimeAsync(1_002);
    const fresh = await waiting;
    await stale.release();
    expect(sem.available).toBe(0);
    await expect(stale.extend(1_000)).rejects.toBeInstanceOf(LeaseLostError);
    await fresh.extend(5_000);
    expect(fresh.expiresAt).toBe(Date.now() + 5_000);
    await fresh.release();
    expect(sem.available).toBe(2);
  });

  it('keeps holders at or under the limit while many promises contend with random holds', async () => {
    const limit = 4;
    const sem = new MemorySemaphore({ limit });
    const intervals: HoldInterval[] = [];
    const worker = async () => {
      for (let i = 0; i < 25; i++) {
        const k = 1 + Math.floor(Math.random() * 3);
        const lease: Lease = await sem.acquire(k, { min: 1 + Math.floor(Math.random() * k) });
        const start = performance.now();
        await new Promise((r) => setTimeout(r, Math.random() * 2));
        intervals.push({ start, end: performance.now(), permits: lease.permits });
        await lease.release();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    expect(intervals).toHaveLength(200);
    const { peak } = peakHeld(intervals);
    expect(peak).toBeLessThanOrEqual(limit);
    expect(peak).toBeGreaterThan(2);
    expect(sem.available).toBe(limit);
  });

  it('rejects impossible requests and options with typed errors', async () => {
    const sem = new MemorySemaphore({ limit: 3 });
    for (const [k, min] of [
      [0, undefined],
      [4, undefined],
      [1.5, undefined],
      [2, 3],
    ] as const) {
      await expect(sem.acquire(k, { min })).rejects.toBeInstanceOf(InvalidPermitRequestError);
    }
    await expect(sem.acquire(1, { deadline: Number.NaN })).rejects.toBeInstanceOf(InvalidPermitRequestError);
    expect(sem.available).toBe(3);
    expect(() => new MemorySemaphore({ limit: 0 })).toThrow(InvalidSemaphoreOptionsError);
    expect(() => new MemorySemaphore({ limit: 2.5 })).toThrow(InvalidSemaphoreOptionsError);
    const lease = await sem.acquire(1);
    await expect(lease.extend(0)).rejects.toBeInstanceOf(InvalidPermitRequestError);
    await expect(sem.acquire(3, { deadline: Date.now() - 1 })).rejects.toBeInstanceOf(SemaphoreTimeoutError);
  });
});
