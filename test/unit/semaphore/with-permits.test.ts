import { describe, expect, it } from 'vitest';
import { MemorySemaphore, withPermits } from '../../../lib/index.js';

/** A minimal concurrency-capped runner standing in for the pool's structural contract. */
class CappedRunner {
  concurrency = 0;
  active = 0;
  peak = 0;
  private readonly queue: (() => void)[] = [];
  private readonly idleWaiters: (() => void)[] = [];

  setConcurrency(n: number): void {
    this.concurrency = n;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.concurrency) await new Promise<void>((r) => this.queue.push(r));
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await fn();
    } finally {
      this.active--;
      this.queue.shift()?.();
      if (this.active === 0 && this.queue.length === 0) for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  onIdle(): Promise<void> {
    return this.active === 0 ? Promise.resolve() : new Promise((r) => this.idleWaiters.push(r));
  }
}

describe('withPermits', () => {
  it('sizes the target to the lease, waits for it to drain, and releases on success and on failure', async () => {
    const sem = new MemorySemaphore({ limit: 5 });
    const other = await sem.acquire(2);
    const runner = new CappedRunner();
    const result = await withPermits(sem, runner, { want: 4 }, async (lease) => {
      expect(lease.permits).toBe(3);
      expect(runner.concurrency).toBe(3);
      expect(sem.available).toBe(0);
      const tasks = Array.from({ length: 10 }, (_, i) =>
        runner.run(() => new Promise((r) => setTimeout(r, 2, i))),
      );
      return (await Promise.all(tasks)).length;
    });
    expect(result).toBe(10);
    expect(runner.peak).toBe(3);
    expect(sem.available).toBe(3);

    let straggler: Promise<unknown> | undefined;
    await expect(
      withPermits(sem, runner, { want: 3 }, async () => {
        // A task still in flight when `run` fails must finish before the permits go back.
        straggler = runner.run(() => new Promise((r) => setTimeout(r, 20)));
        throw new Error('batch failed');
      }),
    ).rejects.toThrow('batch failed');
    expect(runner.active).toBe(0);
    await straggler;
    expect(sem.available).toBe(3);
    await other.release();
  });
});
