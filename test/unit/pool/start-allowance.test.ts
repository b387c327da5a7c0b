import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/executor-pool.js';

// `setStartInterval(ms, { starts })`: no more paced starts than slots booked elsewhere; the rest wait for the
// next call, and unpaced tasks never do.

const T0 = 1_000;

beforeEach(() => {
  vi.useFakeTimers({ now: T0 });
});
afterEach(() => {
  vi.useRealTimers();
});

function starts(pool: ExecutorPool, kinds: string): { at: Array<[string, number]>; all: Promise<unknown> } {
  const at: Array<[string, number]> = [];
  const t0 = performance.now();
  const all = Promise.all(
    [...kinds].map((kind, i) =>
      pool.enqueue(
        async () => {
          at.push([`${kind}${i}`, performance.now() - t0]);
        },
        kind === 'r' ? { paced: false } : {},
      ),
    ),
  );
  return { at, all };
}

describe('ExecutorPool start allowance', () => {
  it('starts no more paced tasks than allowed; reads go on; a new allowance lets the rest go at the interval', async () => {
    const pool = new ExecutorPool({ concurrency: 8, timeout: 0 });
    pool.setStartInterval(10, { starts: 2 });
    const { at, all } = starts(pool, 'wwwrw');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(at).toEqual([
      ['w0', 0],
      ['r3', 0],
      ['w1', 10],
    ]);
    expect(pool.waiting).toBe(2);
    // A shorter interval alone does not lift a spent allowance.
    pool.setStartInterval(5);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(at).toHaveLength(3);
    pool.setStartInterval(10, { starts: 2 });
    await vi.advanceTimersByTimeAsync(1_000);
    await all;
    expect(at.slice(3).map(([name]) => name)).toEqual(['w2', 'w4']);
    expect(pool.waiting).toBe(0);
    pool.stop();
  });

  it('counts retries as starts', async () => {
    const pool = new ExecutorPool({ concurrency: 4, timeout: 0, retries: 1, retryDelay: 1, jitter: 'none' });
    pool.setStartInterval(10, { starts: 1 });
    let attempts = 0;
    const task = pool.enqueue(async () => {
      attempts += 1;
      if (attempts === 1) throw Object.assign(new Error('slow down'), { name: 'SlowDown' });
      return attempts;
    });
    await vi.advanceTimersByTimeAsync(1_000);
    // The first attempt spent the one start: its retry waits.
    expect(attempts).toBe(1);
    expect(pool.waiting).toBe(1);
    pool.setStartInterval(10, { starts: Number.POSITIVE_INFINITY });
    await vi.advanceTimersByTimeAsync(100);
    await expect(task).resolves.toBe(2);
    pool.stop();
  });

  it('lapses withinMs from now however many starts are left, and a later end lets the rest go', async () => {
    const pool = new ExecutorPool({ concurrency: 8, timeout: 0 });
    pool.setStartInterval(10, { starts: 10, withinMs: 25 });
    const { at, all } = starts(pool, 'wwwwwr');
    await vi.advanceTimersByTimeAsync(1_000);
    // Slots at 0, 10 and 20 ms; the one at 30 is past the allowance's end (the read goes at once).
    expect(at.map(([name]) => name)).toEqual(['w0', 'r5', 'w1', 'w2']);
    pool.setStartInterval(10, { withinMs: 1_000 });
    await vi.advanceTimersByTimeAsync(1_000);
    await all;
    expect(at.map(([name]) => name)).toEqual(['w0', 'r5', 'w1', 'w2', 'w3', 'w4']);
    pool.stop();
  });

  it('rejects an allowance that is not a whole number >= 0 or Infinity, naming it', () => {
    const pool = new ExecutorPool({ concurrency: 1 });
    for (const bad of [-1, 1.5, Number.NaN])
      expect(() => pool.setStartInterval(10, { starts: bad })).toThrow(
        expect.objectContaining({ name: 'RangeError', message: expect.stringContaining('starts') }),
      );
    pool.stop();
  });
});
