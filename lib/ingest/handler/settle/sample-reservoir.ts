/**
 * Powertools publishes a metric's EMF line as soon as one metric holds 100 values (CloudWatch's limit per
 * EMF metric), which would split an invocation's line in two; 99 keeps one line per invocation.
 */
export const MAX_SAMPLES_PER_INVOCATION = 99;

/**
 * A uniform random sample of at most `capacity` observations (reservoir sampling, Vitter's algorithm R):
 * constant memory whatever the invocation's size, and every observation equally likely to be kept, so the
 * samples published by many invocations still describe the fleet's distribution.
 */
export class SampleReservoir {
  readonly #kept: number[] = [];
  #seen = 0;

  constructor(
    private readonly capacity: number = MAX_SAMPLES_PER_INVOCATION,
    private readonly random: () => number = Math.random,
  ) {}

  /** Observations offered so far (kept or not). */
  get seen(): number {
    return this.#seen;
  }

  add(value: number): void {
    this.#seen++;
    if (this.#kept.length < this.capacity) {
      this.#kept.push(value);
      return;
    }
    const slot = Math.floor(this.random() * this.#seen);
    if (slot < this.capacity) this.#kept[slot] = value;
  }

  /** The kept observations (all of them while fewer than `capacity` were offered). */
  values(): readonly number[] {
    return this.#kept;
  }
}
