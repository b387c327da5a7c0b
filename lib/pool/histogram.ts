const LINEAR = 64; // values below this (in µs) get a bucket each
const SUB = 32; // buckets per power of two above that: relative error <= 1/32
const MAX_VALUE = 0x7fffffff; // ~35.8 minutes in µs; larger values land in the top bucket
const BUCKETS = LINEAR + (31 - 6) * SUB;

function bucketOf(us: number): number {
  if (us < LINEAR) return us;
  const shift = 31 - Math.clz32(us) - 5;
  return LINEAR + (shift - 1) * SUB + ((us >>> shift) - SUB);
}

function bucketMidpoint(index: number): number {
  if (index < LINEAR) return index;
  const offset = index - LINEAR;
  const shift = (offset >> 5) + 1;
  const mantissa = (offset & (SUB - 1)) + SUB;
  const width = 2 ** shift;
  return mantissa * width + (width - 1) / 2;
}

/**
 * Log-linear histogram of durations (HDR-style): 1 µs buckets below 64 µs, then 32 buckets per doubling,
 * so any quantile is within ~3% of the true value. Constant memory (864 counters), O(1) `record`,
 * quantiles in one pass over the counters.
 */
export class Histogram {
  readonly #counts = new Float64Array(BUCKETS);
  #count = 0;
  #sum = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = 0;

  /** Records a duration in milliseconds (negative values count as 0). */
  record(ms: number): void {
    const value = Math.max(0, ms || 0);
    const us = value * 1000;
    this.#counts[bucketOf(us < MAX_VALUE ? us | 0 : MAX_VALUE)]! += 1;
    this.#count += 1;
    this.#sum += value;
    if (value < this.#min) this.#min = value;
    if (value > this.#max) this.#max = value;
  }

  get count(): number {
    return this.#count;
  }

  /** Mean in ms (exact), 0 when empty. */
  get mean(): number {
    return this.#count === 0 ? 0 : this.#sum / this.#count;
  }

  get min(): number {
    return this.#count === 0 ? 0 : this.#min;
  }

  get max(): number {
    return this.#max;
  }

  /** The value in ms at quantile `q` (0..1), 0 when empty. */
  quantile(q: number): number {
    if (this.#count === 0) return 0;
    const rank = Math.max(1, Math.ceil(Math.min(1, Math.max(0, q)) * this.#count));
    if (rank >= this.#count) return this.#max;
    const counts = this.#counts;
    let seen = 0;
    for (let i = 0; i < BUCKETS; i++) {
      seen += counts[i]!;
      if (seen >= rank) {
        const ms = bucketMidpoint(i) / 1000;
        return Math.min(this.#max, Math.max(this.#min, ms));
      }
    }
    return this.#max;
  }

  reset(): void {
    this.#counts.fill(0);
    this.#count = 0;
    this.#sum = 0;
    this.#min = Number.POSITIVE_INFINITY;
    this.#max = 0;
  }
}
