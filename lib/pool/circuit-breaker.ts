import type { Admission, BreakerCompanion, CircuitState, PoolBreaker } from './companions.js';

/** The circuit breaker's options: `circuitBreaker(options)`, given to `ExecutorPoolOptions.circuitBreaker`. */
export interface CircuitBreakerOptions {
  /**
   * Failure ratio (0..1] over the window that opens the breaker. Only transient failures count.
   * @default 0.5
   * @example { threshold: 0.25 }
   */
  threshold?: number;
  /**
   * No decision before this many attempts were recorded in the window.
   * @default 10
   * @example { minimumRequests: 50 }
   */
  minimumRequests?: number;
  /**
   * How many recent attempts the failure ratio looks at.
   * @default max(100, minimumRequests)
   * @example { windowSize: 500 }
   */
  windowSize?: number;
  /**
   * Milliseconds the breaker stays open before half-opening.
   * @default 60000
   * @example { timeout: 5_000 }
   */
  timeout?: number;
  /**
   * Probe attempts admitted while half-open; all must succeed to close again, one failure re-opens.
   * @default 5
   * @example { halfOpenRequests: 1 }
   */
  halfOpenRequests?: number;
}

export const CIRCUIT_BREAKER_DEFAULTS = {
  threshold: 0.5,
  minimumRequests: 10,
  windowSize: 100,
  timeout: 60_000,
  halfOpenRequests: 5,
} as const satisfies CircuitBreakerOptions;

/**
 * A circuit breaker for `ExecutorPoolOptions.circuitBreaker` (without one, a pool has none). Each pool it
 * is given to gets a breaker of its own.
 * @example new ExecutorPool({ circuitBreaker: circuitBreaker({ threshold: 0.25, timeout: 5_000 }) })
 */
export function circuitBreaker(options: CircuitBreakerOptions = {}): BreakerCompanion {
  return { createBreaker: (onChange) => new CircuitBreaker(options, onChange) };
}

/**
 * Closed -> open when, over the last `windowSize` attempts (at least `minimumRequests` of them), the
 * failure ratio reaches `threshold`. Open rejects at once; after `timeout` ms it half-opens and admits
 * `halfOpenRequests` probes: one probe failure re-opens, all succeeding closes (with a fresh window).
 * Outcomes sit in a fixed ring, so memory is constant.
 */
export class CircuitBreaker implements PoolBreaker {
  readonly #threshold: number;
  readonly #minimumRequests: number;
  readonly #timeout: number;
  readonly #halfOpenRequests: number;
  readonly #ring: Uint8Array;
  readonly #onChange: (state: CircuitState) => void;
  #next = 0;
  #recorded = 0;
  #failures = 0;
  #state: CircuitState = 'closed';
  #openedAt = 0;
  #probesStarted = 0;
  #probesSucceeded = 0;

  constructor(options: CircuitBreakerOptions, onChange: (state: CircuitState) => void) {
    const defaults = CIRCUIT_BREAKER_DEFAULTS;
    this.#threshold = options.threshold ?? defaults.threshold;
    this.#minimumRequests = Math.max(1, options.minimumRequests ?? defaults.minimumRequests);
    this.#timeout = options.timeout ?? defaults.timeout;
    this.#halfOpenRequests = Math.max(1, options.halfOpenRequests ?? defaults.halfOpenRequests);
    this.#ring = new Uint8Array(Math.max(options.windowSize ?? defaults.windowSize, this.#minimumRequests));
    this.#onChange = onChange;
    if (!(this.#threshold > 0 && this.#threshold <= 1)) {
      throw new RangeError(`circuitBreaker.threshold must be in (0, 1], got ${this.#threshold}`);
    }
  }

  get state(): CircuitState {
    return this.#state;
  }

  /** Milliseconds until an open breaker half-opens (0 when not open). */
  retryAfter(now: number): number {
    return this.#state === 'open' ? Math.max(0, this.#openedAt + this.#timeout - now) : 0;
  }

  /** Whether new work is refused outright (open and not yet due to half-open). */
  rejects(now: number): boolean {
    return this.#state === 'open' && now < this.#openedAt + this.#timeout;
  }

  admit(now: number): Admission {
    if (this.#state === 'closed') return 'run';
    if (this.#state === 'open') {
      if (now < this.#openedAt + this.#timeout) return 'reject';
      this.#setState('halfOpen');
      this.#probesStarted = 0;
      this.#probesSucceeded = 0;
    }
    if (this.#probesStarted < this.#halfOpenRequests) {
      this.#probesStarted += 1;
      return 'probe';
    }
    return 'wait';
  }

  /** Gives back a probe that `admit` granted but that could not start after all. */
  cancelProbe(): void {
    if (this.#state === 'halfOpen' && this.#probesStarted > 0) this.#probesStarted -= 1;
  }

  /** Records one finished attempt. `probe` is whether `admit` returned 'probe' for it. */
  record(failed: boolean, probe: boolean, now: number): void {
    if (probe) {
      if (this.#state !== 'halfOpen') return;
      if (failed) {
        this.#open(now);
        return;
      }
      this.#probesSucceeded += 1;
      if (this.#probesSucceeded >= this.#halfOpenRequests) {
        this.#resetWindow();
        this.#setState('closed');
      }
      return;
    }
    if (this.#state !== 'closed') return;
    const ring = this.#ring;
    if (this.#recorded === ring.length) this.#failures -= ring[this.#next]!;
    else this.#recorded += 1;
    ring[this.#next] = failed ? 1 : 0;
    this.#failures += failed ? 1 : 0;
    this.#next = (this.#next + 1) % ring.length;
    if (this.#recorded >= this.#minimumRequests && this.#failures / this.#recorded >= this.#threshold) {
      this.#open(now);
    }
  }

  #open(now: number): void {
    this.#openedAt = now;
    this.#resetWindow();
    this.#setState('open');
  }

  #resetWindow(): void {
    this.#ring.fill(0);
    this.#next = 0;
    this.#recorded = 0;
    this.#failures = 0;
  }

  #setState(state: CircuitState): void {
    if (this.#state === state) return;
    this.#state = state;
    this.#onChange(state);
  }
}
