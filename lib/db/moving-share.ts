/**
 * The share of recent observations that were "yes" (an exponential moving average, weight 1/16 by
 * default), starting at 0. `applySequenced` keeps two: how often an uncached record was absent, and how
 * often a cached ETag was still current. It skips the read only when that guess is right more than
 * `GUESS_THRESHOLD` of the time.
 */
export class MovingShare {
  #value = 0;

  constructor(readonly weight = 1 / 16) {}

  observe(yes: boolean): void {
    this.#value += ((yes ? 1 : 0) - this.#value) * this.weight;
  }

  get value(): number {
    return this.#value;
  }
}

/**
 * A wrong guess costs a PUT that fails its precondition (412, billed like a PUT: $0.005 per 1,000 at S3
 * Standard list prices) plus the read it meant to save (a GET, $0.0004): a guess pays off only when right
 * more than ~93% of the time (0.005 / (0.005 + 0.0004)). 0.9 rounds that down and adapts quickly.
 */
export const GUESS_THRESHOLD = 0.9;
