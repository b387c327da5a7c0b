import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Histogram } from '../../../lib/pool/histogram.js';

/**
 * The oracle: `Histogram` as it was before its first samples got their own compact layout (864 counters
 * allocated up front). The compact layout must answer exactly what this one does, for any samples.
 */
class DenseHistogram {
  static readonly LINEAR = 64;
  static readonly SUB = 32;
  static readonly MAX_VALUE = 0x7fffffff;
  static readonly BUCKETS = 64 + (31 - 6) * 32;
  readonly #counts = new Float64Array(DenseHistogram.BUCKETS);
  #count = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = 0;

  static bucketOf(us: number): number {
    if (us < DenseHistogram.LINEAR) return us;
    const shift = 31 - Math.clz32(us) - 5;
    return DenseHistogram.LINEAR + (shift - 1) * DenseHistogram.SUB + ((us >>> shift) - DenseHistogram.SUB);
  }

  static midpoint(index: number): number {
    if (index < DenseHistogram.LINEAR) return index;
    const offset = index - DenseHistogram.LINEAR;
    const width = 2 ** ((offset >> 5) + 1);
    return ((offset & (DenseHistogram.SUB - 1)) + DenseHistogram.SUB) * width + (width - 1) / 2;
  }

  record(ms: number): void {
    const value = Math.max(0, ms || 0);
    const us = value * 1000;
    this.#counts[
      DenseHistogram.bucketOf(us < DenseHistogram.MAX_VALUE ? us | 0 : DenseHistogram.MAX_VALUE)
    ]! += 1;
    this.#count += 1;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
  }

  quantile(q: number): number {
    if (this.#count === 0) return 0;
    const rank = Math.max(1, Math.ceil(Math.min(1, Math.max(0, q)) * this.#count));
    if (rank >= this.#count) return this.#max;
    let seen = 0;
    for (let i = 0; i < DenseHistogram.BUCKETS; i++) {
      seen += this.#counts[i]!;
      if (seen >= rank) return Math.min(this.#max, Math.max(this.#min, DenseHistogram.midpoint(i) / 1000));
    }
    return this.#max;
  }
}

const QUANTILES = [0, 0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1];

function quantilesOf(h: { quantile(q: number): number }): number[] {
  return QUANTILES.map((q) => h.quantile(q));
}

/** Records `values` in both; `after` runs after each sample. */
function recordBoth(h: Histogram, oracle: DenseHistogram, values: Iterable<number>, after = () => {}): void {
  for (const v of values) {
    h.record(v);
    oracle.record(v);
    after();
  }
}

// Durations as pools see them: sub-µs to minutes, repeated values, and the edge cases record() clamps.
const sample = fc.oneof(
  fc.double({ min: 0, max: 600_000, noNaN: true }),
  fc.double({ min: 0, max: 0.2, noNaN: true }),
  fc.integer({ min: 0, max: 200 }),
  fc.constantFrom(-5, Number.NaN, 0, 10 * 3_600_000),
);

describe('Histogram: the first samples in a compact layout', () => {
  it('answers exactly the quantiles of the all-counters layout, before, at and after the switch', () => {
    fc.assert(
      fc.property(fc.array(sample, { minLength: 0, maxLength: 80 }), (values) => {
        const h = new Histogram();
        const oracle = new DenseHistogram();
        // After every sample: the switch to counters happens on the 33rd.
        recordBoth(h, oracle, values, () => expect(quantilesOf(h)).toEqual(quantilesOf(oracle)));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the samples in order whatever order they come in (descending, repeated, interleaved)', () => {
    const descending = Array.from({ length: 32 }, (_, i) => 32 - i);
    const repeated = [5, 1, 5, 1, 5, 1, 0.001, 0.001, 600_000, 5];
    for (const values of [descending, repeated, [...descending, 0.5, 1000]]) {
      const h = new Histogram();
      const oracle = new DenseHistogram();
      recordBoth(h, oracle, values);
      expect(quantilesOf(h)).toEqual(quantilesOf(oracle));
    }
    const h = new Histogram();
    for (const v of descending) h.record(v);
    expect(h.quantile(0.5)).toBeCloseTo(16, 0);
    expect(h.quantile(0.01)).toBeCloseTo(1, 1);
  });

  it('starts over in the compact layout after reset', () => {
    const h = new Histogram();
    for (let i = 0; i < 100; i++) h.record(1000);
    h.reset();
    expect(h.count).toBe(0);
    expect(h.quantile(0.5)).toBe(0);
    const oracle = new DenseHistogram();
    recordBoth(h, oracle, [3, 1, 2]);
    // Nothing of the 100 samples of 1 s is left in either layout.
    expect(quantilesOf(h)).toEqual(quantilesOf(oracle));
    expect(h.quantile(0.5)).toBeCloseTo(2, 1);
    recordBoth(
      h,
      oracle,
      Array.from({ length: 40 }, (_, i) => i),
    );
    expect(quantilesOf(h)).toEqual(quantilesOf(oracle));
  });
});
