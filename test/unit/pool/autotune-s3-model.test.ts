// The autotuner on a real ExecutorPool writing to the in-process S3 model, on vitest's fake clock (the
// pool's timers and performance.now, the model's Date.now and sleeps): deterministic and instant-ish.
// The limit is scaled down to 800 writes/s per prefix (at 400/s, 5 in flight, one slot is 20% of the rate)
// so a 14 s scenario is about ten thousand writes.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryBucket, MemoryObjectStore } from '../../../lib/db/memory-object-store.js';
import { systemClock } from '../../../lib/local/s3-behaviour/clock.js';
import { S3BehaviourModel } from '../../../lib/local/s3-behaviour/s3-behaviour-model.js';
import { Autotuner } from '../../../lib/pool/autotune/index.js';
import { ExecutorPool } from '../../../lib/pool/index.js';

const LIMIT = 800;

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

function scenario() {
  const model = new S3BehaviourModel({
    writesPerSecond: LIMIT,
    latency: { medianMs: 20, p99Ms: 80 },
    clock: systemClock,
    seed: 3,
  });
  const store = new MemoryObjectStore({ bucket: new MemoryBucket('autotune-test'), model });
  const pool = new ExecutorPool({ concurrency: 2, retryDelay: 100 });
  // The model is S3 scaled down, so is the tuner's prior (S3's documented 3,500 writes/s per prefix).
  const tuner = new Autotuner(pool, { maxConcurrency: 200, throttle: { initialRate: LIMIT } });
  const writes: Promise<unknown>[] = [];
  for (let i = 0; i < 14_000; i++) {
    writes.push(
      pool.enqueue(({ signal }) =>
        store.put({ key: `t=acme/r=orders/id=${i}.json`, body: '{}' }, { signal }),
      ),
    );
  }
  for (const w of writes) w.catch(() => {});
  /** Runs `ms` of simulated time; returns accepted writes/s and the share of requests answered 503. */
  async function window(
    ms: number,
  ): Promise<{ goodput: number; throttledShare: number; meanConcurrency: number }> {
    model.resetStats();
    let sum = 0;
    for (let t = 0; t < ms; t += 50) {
      await vi.advanceTimersByTimeAsync(50);
      sum += pool.concurrency;
    }
    const { ok, throttled, requests } = model.stats().total;
    const meanConcurrency = sum / (ms / 50);
    return { goodput: (ok * 1000) / ms, throttledShare: throttled / Math.max(1, requests), meanConcurrency };
  }
  return { model, pool, tuner, window };
}

describe('Autotuner against the S3 behaviour model (fake clock)', () => {
  it('converges, backs off when the limit halves, and recovers when it comes back', async () => {
    const { model, pool, tuner, window } = scenario();

    // Converges: from concurrency 2 to the prefix's limit within 2 s, then holds it with few 503s.
    await window(2000);
    const steady = await window(2000);
    // 80% here (the bench holds >= 90% at full scale): at ~19 in flight one slot is 5% of the rate.
    expect(steady.goodput).toBeGreaterThanOrEqual(0.8 * LIMIT);
    expect(steady.throttledShare).toBeLessThanOrEqual(0.02);
    expect(tuner.state().cuts).toBeGreaterThan(0);
    // Little's law: 800/s x ~24 ms mean latency = ~19 in flight; the tuner must not sit at its max.
    expect(steady.meanConcurrency).toBeLessThan(30);

    // Backs off: S3 halves the prefix's rate; within 1.5 s the tuner sends about the new limit.
    model.setRates({ writesPerSecond: LIMIT / 2 });
    await window(1500);
    const halved = await window(2500);
    expect(halved.goodput).toBeGreaterThanOrEqual(0.85 * (LIMIT / 2));
    expect(halved.throttledShare).toBeLessThanOrEqual(0.03);
    expect(halved.meanConcurrency).toBeLessThan(0.8 * steady.meanConcurrency);

    // Recovers: the rate comes back; busy probing (cubic, convex past the old rate) finds it within 6 s.
    model.setRates({ writesPerSecond: LIMIT });
    await window(4500);
    const recovered = await window(1500);
    expect(recovered.goodput).toBeGreaterThanOrEqual(0.85 * LIMIT);
    expect(recovered.meanConcurrency).toBeGreaterThan(1.5 * halved.meanConcurrency);
    pool.stop();
  }, 60_000);
});
