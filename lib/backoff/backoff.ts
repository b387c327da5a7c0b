/**
 * One wait of a backoff and the way to the next: `duration` is how long to wait now, `next()` the wait after
 * this one. A step never changes (a jittered duration is drawn when first read, then kept, and `next()`
 * always returns the same step), so a caller may keep one per task (the pool) or per loop (the semaphore)
 * and step it on each failure without sharing state.
 * @example
 * let wait = new ExponentialBackoff({ initialDelay: 100 }).next();
 * await sleep(wait.duration); // up to 100 ms
 * wait = wait.next();         // up to 200 ms
 */
export interface Backoff {
  /** Milliseconds to wait (>= 0). */
  readonly duration: number;
  /** The step after this one. */
  next(): Backoff;
}

/** Where a backoff starts: `next()` is its first wait. Each strategy (exponential, decorrelated, constant) is one. */
export interface BackoffStrategy {
  next(): Backoff;
}

/** A uniform draw in [0, 1), as `Math.random` gives. Injected by tests to make jittered waits deterministic. */
export type RandomSource = () => number;

/** `Math.random`, read at each draw (so a test that replaces `Math.random` is seen). */
export const mathRandom: RandomSource = () => Math.random();

/** The options every strategy with a growing wait shares. */
export interface BackoffBounds {
  /**
   * The first wait in ms: exponential doubles its ceiling from here, decorrelated never waits less.
   * @default 1000
   * @example new ExponentialBackoff({ initialDelay: 50 })
   */
  initialDelay?: number;
  /**
   * The largest wait in ms (`Infinity`: none).
   * @default 20000
   * @example new ExponentialBackoff({ maxDelay: 5_000 })
   */
  maxDelay?: number;
  /**
   * The uniform [0, 1) source of the jitter.
   * @default Math.random
   * @example new ExponentialBackoff({ random: () => 0.5 }) // the middle of every range
   */
  random?: RandomSource;
}

/** `bounds` with defaults filled in; a negative or non-numeric delay is a RangeError naming the option. */
export function resolveBounds(bounds: BackoffBounds): {
  baseMs: number;
  capMs: number;
  random: RandomSource;
} {
  return {
    baseMs: nonNegativeMs('initialDelay', bounds.initialDelay ?? 1000),
    capMs: nonNegativeMs('maxDelay', bounds.maxDelay ?? 20_000),
    random: bounds.random ?? mathRandom,
  };
}

/** Rejects a negative or non-numeric option with a RangeError naming it. */
export function nonNegativeMs(name: string, value: number): number {
  if (typeof value !== 'number' || Number.isNaN(value) || value < 0) {
    throw new RangeError(`${name} must be a number >= 0, got ${value}`);
  }
  return value;
}
