import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { Autotuner, autotune, circuitBreaker, deduplication, ExecutorPool } from '../../../lib/pool/index.js';

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

  it("starts an autotuner from autotune's initialConcurrency (default 10) with concurrency 'auto'", () => {
    expect(new ExecutorPool({ concurrency: 'auto', autotune: autotune() }).concurrency).toBe(10);
    const pool = new ExecutorPool({ concurrency: 'auto', autotune: autotune({ initialConcurrency: 4 }) });
    expect(pool.autotuner).toBeInstanceOf(Autotuner);
    expect(pool.concurrency).toBe(4);
  });

  it('starts from the numeric concurrency when given one', () => {
    const pool = new ExecutorPool({ concurrency: 7, autotune: autotune() });
    expect(pool.autotuner).toBeInstanceOf(Autotuner);
    expect(pool.concurrency).toBe(7);
  });

  it('gives each pool a tuner of its own from one autotune() value', () => {
    const tuning = autotune({ maxConcurrency: 50 });
    expect(tuning.maxConcurrency).toBe(50);
    const a = new ExecutorPool({ concurrency: 'auto', autotune: tuning });
    const b = new ExecutorPool({ concurrency: 'auto', autotune: tuning });
    expect(a.autotuner).not.toBe(b.autotuner);
  });

  it("refuses concurrency 'auto' without a tuner, and bad autotune options where they are written", () => {
    expect(() => new ExecutorPool({ concurrency: 'auto' })).toThrow(
      expect.objectContaining({
        name: 'TypeError',
        message: expect.stringContaining('autotune: autotune()'),
      }),
    );
    expect(() => autotune({ minConcurrency: 0 })).toThrow(
      expect.objectContaining({
        name: 'RangeError',
        message: expect.stringContaining('autotune.minConcurrency'),
      }),
    );
  });

  it('refuses an options object where a companion belongs, with a TypeError naming the option', () => {
    const cases = [
      ['autotune', { concurrency: 'auto', autotune: { initialConcurrency: 4 } }],
      ['circuitBreaker', { circuitBreaker: { enabled: true, threshold: 0.5 } }],
      ['deduplication', { deduplication: { ttl: 5_000 } }],
    ] as const;
    for (const [key, options] of cases) {
      expect(() => new ExecutorPool(options as never)).toThrow(
        expect.objectContaining({ name: 'TypeError', message: expect.stringContaining(`${key}: ${key}(`) }),
      );
    }
    expect(() => new ExecutorPool({ circuitBreaker: null as never })).toThrow(
      expect.objectContaining({ name: 'TypeError', message: expect.stringContaining('got null') }),
    );
    const composed = new ExecutorPool({ circuitBreaker: circuitBreaker(), deduplication: deduplication() });
    expect(composed.circuitState).toBe('closed');
  });

  it('backs off under SlowDown but never below minConcurrency, and the cap holds throughout', async () => {
    const pool = new ExecutorPool({
      concurrency: 'auto',
      retries: 0,
      autotune: autotune({ initialConcurrency: 16, minConcurrency: 3, maxConcurrency: 32 }),
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
    const pool = new ExecutorPool({ concurrency: 'auto', autotune: autotune({ initialConcurrency: 8 }) });
    const detach = vi.spyOn(pool.autotuner!, 'detach');
    pool.stop();
    expect(detach).toHaveBeenCalledTimes(1);
  });
});
