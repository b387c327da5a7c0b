export interface MemoryCapOptions {
  /** Share (percent) of `budgetBytes` in-flight operations may use. */
  targetPercent: number;
  budgetBytes: number;
  /** Bytes in use now (RSS by default). */
  usage: () => number;
  /** Milliseconds between two readings of `usage` (it is a syscall; per-sample reading would cost). */
  sampleEveryMs?: number;
}

/** In-flight operations below this say too little about their footprint to cap anything. */
const MIN_IN_FLIGHT = 4;

/**
 * A concurrency cap from memory: the memory left for in-flight work (`targetPercent` of the budget minus
 * what the process used with nothing in flight) divided by the observed bytes per in-flight operation
 * (growth over that baseline / in-flight count, smoothed). Unlimited until it has seen enough in flight.
 */
export class MemoryCap {
  readonly #options: Required<MemoryCapOptions>;
  readonly #baseline: number;
  #bytesPerOp = 0;
  #lastReadAt = Number.NEGATIVE_INFINITY;
  #cap = Number.POSITIVE_INFINITY;

  constructor(options: MemoryCapOptions) {
    this.#options = { sampleEveryMs: 250, ...options };
    this.#baseline = options.usage();
  }

  get cap(): number {
    return this.#cap;
  }

  /** Smoothed bytes per in-flight operation (0 until measured). */
  get bytesPerOperation(): number {
    return this.#bytesPerOp;
  }

  onSample(now: number, inFlight: number): number {
    if (inFlight < MIN_IN_FLIGHT || now - this.#lastReadAt < this.#options.sampleEveryMs) return this.#cap;
    this.#lastReadAt = now;
    const growth = this.#options.usage() - this.#baseline;
    if (growth <= 0) return this.#cap;
    const perOp = growth / inFlight;
    this.#bytesPerOp = this.#bytesPerOp === 0 ? perOp : 0.8 * this.#bytesPerOp + 0.2 * perOp;
    const room = (this.#options.targetPercent / 100) * this.#options.budgetBytes - this.#baseline;
    this.#cap = Math.max(0, Math.floor(room / this.#bytesPerOp));
    return this.#cap;
  }
}
