import { type Backoff, type BackoffStrategy, nonNegativeMs } from './backoff.js';

/** The same wait every time. */
export class ConstantBackoff implements BackoffStrategy {
  readonly #step: Backoff;

  /**
   * @param delayMs every wait, in ms (>= 0)
   * @example new ConstantBackoff(250) // 250 ms, 250 ms, ...
   */
  constructor(delayMs: number) {
    const duration = nonNegativeMs('delay', delayMs);
    const step: Backoff = { duration, next: () => step };
    this.#step = step;
  }

  next(): Backoff {
    return this.#step;
  }
}
