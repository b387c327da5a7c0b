import type { Backoff, BackoffBounds, BackoffStrategy, RandomSource } from './backoff.js';
import { mathRandom, resolveBounds } from './backoff.js';

/** `DecorrelatedBackoff`'s options: its least and first wait, its cap, its random source. */
export type DecorrelatedBackoffOptions = BackoffBounds;

/**
 * The wait after one of `previousMs` with decorrelated jitter: `min(cap, uniform in [base, 3 x previous])`
 * (AWS's "decorrelated jitter"; with no previous wait, `base`). One draw per wait, the first included.
 */
export function decorrelatedDelay(
  previousMs: number,
  baseMs: number,
  capMs: number,
  random: RandomSource = mathRandom,
): number {
  const upper = Math.max(baseMs, previousMs * 3);
  return Math.min(capMs, baseMs + random() * (upper - baseMs));
}

/** Each wait drawn between the base and three times the previous one: spread out, growing, capped. */
export class DecorrelatedBackoff implements BackoffStrategy {
  readonly #base: number;
  readonly #cap: number;
  readonly #random: RandomSource;

  constructor(options: DecorrelatedBackoffOptions = {}) {
    ({ baseMs: this.#base, capMs: this.#cap, random: this.#random } = resolveBounds(options));
  }

  next(): Backoff {
    return this.#after(0);
  }

  #after(previousMs: number): Backoff {
    const duration = decorrelatedDelay(previousMs, this.#base, this.#cap, this.#random);
    return { duration, next: () => this.#after(duration) };
  }
}
