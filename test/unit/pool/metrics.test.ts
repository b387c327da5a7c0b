import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { Histogram } from '../../../lib/pool/histogram.js';
import { ExecutorPool } from '../../../lib/pool/index.js';
import { useFakeTimersInEachTest } from './helpers.js';

function exactQuantile(sorted: number[], q: number): number {
  return sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]!;
}

describe('Histogram', () => {
  it('answers quantiles within ~3% (or 1 µs) of the exact value', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 600_000, noNaN: true }), { minLength: 1, maxLength: 500 }),
        fc.constantFrom(0.5, 0.9, 0.95, 0.99, 1),
        (values, q) => {
          const h = new Histogram();
          for (const v of values) h.record(v);
          const exact = exactQuantile(
            [...values].sort((a, b) => a - b),
            q,
          );
          const approx = h.quantile(q);
          expect(Math.abs(approx - exact)).toBeLessThanOrEqual(Math.max(0.001, exact * (1 / 32)));
        },
      ),
    );
  });

  it('tracks count, mean, min, max exactly, in constant memory', () => {
    const h = new Histogram();
    expect(h.quantile(0.5)).toBe(0);
    for (let i = 1; i <= 100_000; i++) h.record(i % 100);
    expect(h.count).toBe(100_000);
    expect(h.min).toBe(0);
    expect(h.max).toBe(99);
    expect(h.mean).toBeCloseTo(49.5, 6);
    expect(h.quantile(0.5)).toBeCloseTo(49, 0);
    h.record(-5);
    h.record(Number.NaN);
    expect(h.min).toBe(0);
    h.record(10 * 3_600_000); // beyond the top bucket: clamped, max still exact
    expect(h.max).toBe(36_000_000);
    expect(h.quantile(1)).toBe(36_000_000);
  });
});

describe('pool metrics', () => {
  useFakeTimersInEachTest();

  it('reports execution and queue-wait quantiles, throughput, errors and concurrency', async () => {
    const pool = new ExecutorPool({ concurrency: 2, retries: 0, timeout: 0 });
    const tasks = Array.from({ length: 10 }, (_, i) =>
      pool
        .enqueue(async () => {
          await new Promise((resolve) => setTimeout(resolve, i < 9 ? 10 : 100));
          if (i === 4) throw Object.assign(new Error('nope'), { name: 'ValidationError' });
        })
        .catch(() => {}),
    );
    await vi.advanceTimersByTimeAsync(200);
    await Promise.all(tasks);
    const stats = pool.getStats();
    expect(stats).toEqual({ queueSize: 0, activeCount: 0, processedCount: 9, errorCount: 1, retryCount: 0 });

    const aggregate = pool.getAggregateMetrics();
    expect(aggregate.avgExecution).toBeCloseTo((9 * 10 + 100) / 10, 1);
    expect(aggregate.p95Execution).toBeGreaterThan(90);
    expect(aggregate.throughput).toBeGreaterThan(0);

    const detailed = pool.getDetailedMetrics();
    expect(detailed.latency.p50).toBeCloseTo(10, 0);
    expect(detailed.latency.p99).toBeGreaterThan(95);
    // Pairs of 10 ms tasks: the k-th pair waited 10·k ms for a slot.
    expect(detailed.queueWait.p50).toBeGreaterThanOrEqual(19);
    expect(detailed.queueWait.max).toBeCloseTo(40, 0);
    expect(detailed.errors).toEqual({ rate: 0.1, types: { ValidationError: 1 } });
    expect(detailed.concurrency.current).toBe(0);
    // Two in flight for 50 ms, then the 100 ms task alone for 90 ms, over the 200 ms since the first start.
    expect(detailed.concurrency.avg).toBeCloseTo((2 * 50 + 90) / 200, 2);
    expect(detailed.concurrency.utilization).toBeCloseTo(detailed.concurrency.avg / 2, 6);
    expect(detailed.throughput.current).toBe(10);
    expect(detailed.throughput.peak).toBeGreaterThanOrEqual(10);
    await vi.advanceTimersByTimeAsync(2_000);
    expect(pool.getDetailedMetrics().throughput.current).toBe(0);
    expect(pool.getDetailedMetrics().throughput.peak).toBe(10);
  });
});
