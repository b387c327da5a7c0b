import type { ThrottleOptions } from './options.js';

/**
 * A per-prefix request rate that S3 throttling steers, CUBIC-style (the curve the AWS SDK's adaptive retry
 * mode uses): unknown (unlimited) until the first SlowDown/503 or timeout; then each throttle, at most once
 * per round trip, cuts the rate to `beta` x the rate it was sending at; between throttles, while the pool is
 * busy, the rate climbs a cubic curve back to that rate in `recoverySeconds` of busy time (concave: fast,
 * then flat near the old limit) and past it (convex: probing for new headroom).
 *
 * A pool of the project serves one tenant's Database, i.e. one S3 prefix, so this rate is that prefix's.
 */
/**
 * Convex probe past the plateau: +30% after one recovery period (2 s by default), +240% after two. Gentle
 * next to the last known good rate, so a probe that touches S3's limit overshoots it by a few percent.
 */
const PROBE_DEPTH = 0.3;

export class ThrottleRateLimit {
  readonly #beta: number;
  readonly #recoveryMs: number;
  #rate = Number.POSITIVE_INFINITY;
  #wMax = 0;
  /** How deep the last cut went (1 - factor): the cubic curve starts there and is flat again at wMax. */
  #cutDepth = 0;
  /** Busy milliseconds since the last cut (the cubic curve's clock does not run while the pool idles). */
  #busyMs = 0;
  #lastSampleAt: number | undefined;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  #throttles = 0;
  #cuts = 0;

  constructor(options: Required<ThrottleOptions>) {
    this.#beta = options.beta;
    this.#recoveryMs = options.recoverySeconds * 1000;
    if (Number.isFinite(options.initialRate)) {
      // A known starting rate is a plateau (TCP's initial ssthresh): slow start stops there and the convex
      // probe goes on from it, so the first overshoot is a gentle one instead of a doubling.
      this.#rate = options.initialRate;
      this.#wMax = options.initialRate;
      this.#cutDepth = PROBE_DEPTH;
      this.#busyMs = this.#recoveryMs;
    }
  }

  /** Allowed requests per second (`Infinity` until the first throttle). */
  get rate(): number {
    return this.#rate;
  }

  /** Throttle signals seen, and how many of them cut the rate (the rest fell in an already-cut round trip). */
  get counts(): { throttles: number; cuts: number } {
    return { throttles: this.#throttles, cuts: this.#cuts };
  }

  /**
   * An attempt succeeded (any attempt: a retry that gets through is capacity too). `sendingRate` is what
   * the pool sends now, per second (in flight / mean latency, by Little's law).
   */
  onSuccess(now: number, busy: boolean, sendingRate: number): number {
    this.#advance(now, busy);
    if (this.#rate === Number.POSITIVE_INFINITY) return this.#rate;
    const t = (this.#busyMs - this.#recoveryMs) / this.#recoveryMs;
    // Concave (t < 0) from the cut back up to the plateau; convex (t > 0) past it at a fixed pace, so a prefix
    // whose limit was raised is found in seconds whatever the last cut was.
    const cubic = this.#wMax * (1 + (t < 0 ? this.#cutDepth : PROBE_DEPTH) * t ** 3);
    // Never more than twice what was really sent: a rate the pool cannot use is no evidence of headroom.
    this.#rate = Math.max(1, Math.min(cubic, 2 * Math.max(sendingRate, this.#wMax * this.#beta)));
    return this.#rate;
  }

  /**
   * An attempt that started at `startedAt` was throttled (SlowDown/503/429) or timed out. Attempts that
   * were already in flight when the rate was last cut answer for the old rate and do not cut again.
   */
  onThrottle(now: number, startedAt: number, busy: boolean, sendingRate: number, acceptedRate = 0): number {
    this.#advance(now, busy);
    this.#throttles += 1;
    if (startedAt < this.#lastCutAt) return this.#rate;
    // The cut is relative to what was really sent, which a pool capped by something else may keep below the rate.
    const sending = Math.min(this.#rate, sendingRate);
    if (!(sending > 0 && Number.isFinite(sending))) return this.#rate;
    this.#cuts += 1;
    if (this.#wMax === 0) {
      // Leaving slow start (x2 per round trip) the overshoot is up to 2x and S3's burst allowance inflates
      // what it accepted: halve what was sent, as TCP does, and take that as the plateau (ssthresh), probing
      // up from there convexly.
      this.#rate = Math.max(1, sending / 2);
      this.#wMax = this.#rate;
      this.#cutDepth = PROBE_DEPTH;
      this.#busyMs = this.#recoveryMs;
      this.#lastCutAt = now;
      return this.#rate;
    }
    // While S3 throttles, what it accepts is its limit: that is the last known good rate (the plateau the
    // cubic curve flattens at), and the new rate sits `beta` under it, never less than half what was sent.
    const accepted = acceptedRate > 0 ? Math.min(acceptedRate, sending) : sending;
    this.#wMax = accepted;
    this.#rate = Math.max(1, sending / 2, this.#beta * accepted);
    this.#cutDepth = Math.max(1 - this.#beta, 1 - this.#rate / this.#wMax);
    this.#busyMs = 0;
    this.#lastCutAt = now;
    return this.#rate;
  }

  #advance(now: number, busy: boolean): void {
    if (this.#lastSampleAt !== undefined && busy) this.#busyMs += Math.max(0, now - this.#lastSampleAt);
    this.#lastSampleAt = now;
  }
}
