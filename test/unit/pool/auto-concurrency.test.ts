import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { ExecutorPool } from '../../../lib/pool/index.js';

function slowDown(): Error {
  return Object.assign(new Error('Please reduce your request rate.'), {
    name: 'SlowDown',
    $metadata: { httpStatusCode: 503 },
    $fault: 'server',
  });
}

describe("ExecutorPool concurrency: 'auto'", () => {
  it('is off unless asked for', () => {
    expect(new ExecutorPool({ concurrency: 5 }).autotuner).toBeUndefined();
  });

  it("starts an autotuner from autotune.initialConcurrency (default 10) with concurrency 'auto'", () => {
    expect(new ExecutorPool({ concurrency: 'auto' }).concurrency).toBe(10);
    const pool = new ExecutorPool({ concurrency: 'auto', autotune: { initialConcurrency: 4 } });
    expect(pool.autotuner).toBeDefined();
    expect(pool.concurrency).toBe(4);
  });

  it('starts from the numeric concurrency with autotune.enabled (the seed option shape)', () => {
    const pool = new ExecutorPool({ concurrency: 7, autotune: { enabled: true } });
    expect(pool.autotuner).toBeDefined();
    expect(pool.concurrency).toBe(7);
  });

  it('backs off under SlowDown but never below minConcurrency, and the cap holds throughout', async () => {
    const pool = new ExecutorPool({
      concurrency: 'auto',
      retries: 0,
      autotune: { initialConcurrency: 16, minConcurrency: 3, maxConcurrency: 32 },
    });
    let active = 0;
    let worstExcess = 0;
    let lowestCap = pool.concurrency;
    const tasks = Array.from({ length: 400 }, () =>
      pool
        .enqueue(async () => {
          active++;
          worstExcess = Math.max(worstExcess, active - pool.concurrency);
          lowestCap = Math.min(lowestCap, pool.concurrency);
          await nextTurn();
          active--;
          throw slowDown();
        })
        .catch(() => undefined),
    );
    await Promise.all(tasks);
    await pool.drain();
    expect(pool.concurrency).toBeLessThan(16);
    expect(lowestCap).toBeGreaterThanOrEqual(3);
    expect(pool.concurrency).toBeGreaterThanOrEqual(3);
    // A shrink never aborts running work, so in-flight may exceed a freshly lowered cap only by what was
    // already running; it never grows past the cap it was started under.
    expect(worstExcess).toBeLessThanOrEqual(16 - 3);
  });

  it('detaches the tuner from the pool when the pool stops', () => {
    const pool = new ExecutorPool({ concurrency: 'auto', autotune: { initialConcurrency: 8 } });
    const detach = vi.spyOn(pool.autotuner!, 'detach');
    pool.stop();
    expect(detach).toHaveBeenCalledTimes(1);
  });
});
