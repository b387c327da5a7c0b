import {
  type Backoff,
  type BackoffBounds,
  type BackoffStrategy,
  mathRandom,
  type RandomSource,
  resolveBounds,
} from './backoff.js';

/** The exponent stops growing here: 2^30 x any sane base is past any cap, and an infinite cap stays finite. */
const MAX_DOUBLINGS = 30;

export interface ExponentialBackoffOptions extends BackoffBounds {
  /**
   * `'full'`: each wait is uniform in [0, ceiling] (AWS's "full jitter", so waiters do not retry in
   * lockstep); `'none'`: the ceiling itself.
   * @default 'full'
   * @example new ExponentialBackoff({ jitter: 'none' }) // 1 s, 2 s, 4 s, ... 20 s
   */
  jitter?: 'full' | 'none';
}

/**
 * Wait number `n` (1-based; below 1 counts as 1) of a capped exponential backoff: `min(cap, base x 2^(n-1))`,
 * times a uniform draw with full jitter. `base` and `cap` in one unit (ms for the strategies, seconds for an
 * SQS delay). For callers that know only a count (a receive count, a number of deferrals); unchecked.
 */
export function exponentialDelay(
  n: number,
  base: number,
  cap: number,
  jitter: 'full' | 'none' = 'full',
  random: RandomSource = mathRandom,
): number {
  const ceiling = Math.min(cap, base * 2 ** Math.min(Math.max(n - 1, 0), MAX_DOUBLINGS));
  return jitter === 'none' ? ceiling : random() * ceiling;
}

/** A capped exponential backoff, with full jitter or none. */
export class ExponentialBackoff implements BackoffStrategy {
  readonly #base: number;
  readonly #cap: number;
  readonly #jitter: 'full' | 'none';
  readonly #random: RandomSource;

  constructor(options: ExponentialBackoffOptions = {}) {
    ({ baseMs: this.#base, capMs: this.#cap, random: this.#random } = resolveBounds(options));
    this.#jitter = options.jitter ?? 'full';
    if (this.#jitter !== 'full' && this.#jitter !== 'none') {
      throw new RangeError(`jitter must be 'full' or 'none', got ${String(this.#jitter)}`);
    }
  }

  next(): Backoff {
    return new ExponentialStep(this, 1);
  }

  /** Wait number `n` (1-based), drawn afresh: for a caller that knows only a count (a receive count). */
  delayAt(n: number): number {
    return exponentialDelay(n, this.#base, this.#cap, this.#jitter, this.#random);
  }
}

/** Wait `n` of an exponential backoff, drawn when first read (so draws come in the order waits are used). */
class ExponentialStep implements Backoff {
  readonly #strategy: ExponentialBackoff;
  readonly #n: number;
  #duration: number | undefined = undefined;
  #next: Backoff | undefined = undefined;

  constructor(strategy: ExponentialBackoff, n: number) {
    this.#strategy = strategy;
    this.#n = n;
  }

  get duration(): number {
    this.#duration ??= this.#strategy.delayAt(this.#n);
    return this.#duration;
  }

  next(): Backoff {
    this.#next ??= new ExponentialStep(this.#strategy, this.#n + 1);
    return this.#next;
  }
}
