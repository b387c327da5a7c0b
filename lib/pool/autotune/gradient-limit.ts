import type { GradientOptions } from './options.js';

export interface GradientLimitOptions extends Required<GradientOptions> {
  initialLimit: number;
  minLimit: number;
  maxLimit: number;
  /** Absolute latency ceiling in ms (`Infinity`: none). */
  targetLatency: number;
}

/** Samples before the long-term average is trusted: until then the limit holds still. */
const WARMUP_SAMPLES = 10;

/**
 * Growth per sample at most: x1.25 per round trip while probing. Faster ramps overshoot an unknown rate
 * limit further before the first throttle comes back (a service's burst allowance hides it for a while).
 */
const MAX_GROWTH_PER_SAMPLE = 0.25;

/**
 * A concurrency limit from the latency gradient, after Netflix's Gradient2: the ratio of long-term to
 * short-term latency (first attempts only: a retry's latency says more about backoff than about load)
 * scales the limit down when latency climbs, and a headroom of sqrt(limit) lets it probe upward while the
 * pool is busy. Each estimate is smoothed into the limit, so one slow request moves it a little.
 */
export class GradientLimit {
  readonly #options: GradientLimitOptions;
  #limit: number;
  #longRtt = 0;
  #shortRtt = 0;
  #samples = 0;
  #slowStart = true;

  constructor(options: GradientLimitOptions) {
    this.#options = options;
    this.#limit = options.initialLimit;
  }

  /** The current limit (fractional; callers round). */
  get limit(): number {
    return this.#limit;
  }

  /** Long-term mean latency of first attempts in ms (0 before any sample). */
  get longRtt(): number {
    return this.#longRtt;
  }

  get shortRtt(): number {
    return this.#shortRtt;
  }

  /** Whether enough samples came in for the latency means to be used. */
  get warmedUp(): boolean {
    return this.#samples >= WARMUP_SAMPLES;
  }

  /**
   * Jumps the limit up to `limit` (bounded) during slow start: when a rate is known up front, Little's law
   * gives the concurrency at once and ramping up to it would only waste the first round trips.
   */
  raiseTo(limit: number): void {
    if (this.#slowStart && Number.isFinite(limit) && limit > this.#limit) {
      this.#limit = Math.min(this.#options.maxLimit, limit);
    }
  }

  /** Whether the start-up ramp (x2 per round trip) is still on. */
  get slowStart(): boolean {
    return this.#slowStart;
  }

  /**
   * A congestion signal (throttle, timeout) ends the start-up ramp for good, like TCP's first loss: from
   * then on growth is capped at x1.25 per round trip and the throttle-rate limit does the probing.
   */
  endSlowStart(): void {
    this.#slowStart = false;
  }

  /** One successful first attempt took `rttMs` while `inFlight` attempts were running. Returns the new limit. */
  onSample(rttMs: number, inFlight: number): number {
    const o = this.#options;
    this.#samples += 1;
    if (this.#samples <= WARMUP_SAMPLES) {
      // A plain mean over the warm-up, so the first samples do not count for 1/600 each.
      this.#longRtt += (rttMs - this.#longRtt) / this.#samples;
      this.#shortRtt = this.#longRtt;
      return this.#limit;
    }
    // A running mean until the window has filled (alpha = max(1/n, 1/window)): with a fixed 1/600 the
    // first, fastest answers of a burst would bias the mean low for hundreds of samples, and Little's law
    // (rate x mean latency) would then under-size the pool.
    this.#longRtt += (rttMs - this.#longRtt) / Math.min(this.#samples, o.longWindow);
    this.#shortRtt += (rttMs - this.#shortRtt) / o.shortWindow;
    // After an overload the long average stays inflated; let it fall back toward the present.
    if (this.#longRtt > 2 * this.#shortRtt) this.#longRtt *= 0.95;
    let gradient = Math.max(0.5, Math.min(1, (o.tolerance * this.#longRtt) / this.#shortRtt));
    if (this.#shortRtt > o.targetLatency)
      gradient = Math.min(gradient, Math.max(0.5, o.targetLatency / this.#shortRtt));
    // App-limited: with under half the limit in use, latency says nothing about a higher limit.
    if (gradient >= 1 && inFlight < this.#limit / 2) return this.#limit;
    const estimate = this.#limit * gradient + Math.sqrt(this.#limit);
    // Gradient2's headroom adds sqrt(limit) per update; per sample (limit samples per round trip) that
    // would explode, so growth is capped like a slow start.
    // Slow start: +1 per sample doubles the limit per round trip while latency stays flat.
    if (this.#slowStart && gradient >= 1) {
      this.#limit = Math.min(o.maxLimit, this.#limit + 1);
      return this.#limit;
    }
    if (gradient < 1) this.#slowStart = false;
    const next = Math.min(
      this.#limit + MAX_GROWTH_PER_SAMPLE,
      this.#limit * (1 - o.smoothing) + estimate * o.smoothing,
    );
    this.#limit = Math.min(o.maxLimit, Math.max(o.minLimit, next));
    return this.#limit;
  }
}
