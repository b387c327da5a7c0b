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
    return new DecorrelatedStep(this, undefined);
  }

  /** The wait after one of `previousMs`, drawn afresh. */
  delayAfter(previousMs: number): number {
    return decorrelatedDelay(previousMs, this.#base, this.#cap, this.#random);
  }
}

/** A wait of a decorrelated backoff, drawn when first read (after its previous wait, which it depends on). */
class DecorrelatedStep implements Backoff {
  readonly #strategy: DecorrelatedBackoff;
  readonly #previous: Backoff | undefined;
  #duration: number | undefined = undefined;
  #next: Backoff | undefined = undefined;

  constructor(strategy: DecorrelatedBackoff, previous: Backoff | undefined) {
    this.#strategy = strategy;
    this.#previous = previous;
  }

  get duration(): number {
    this.#duration ??= this.#strategy.delayAfter(this.#previous?.duration ?? 0);
    return this.#duration;
  }

  next(): Backoff {
    this.#next ??= new DecorrelatedStep(this.#strategy, this);
    return this.#next;
  }
}
