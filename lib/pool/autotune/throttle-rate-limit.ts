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
    const cubic = this.#wMax * (1 + this.#cutDepth * t ** 3);
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
    // Leaving the start-up ramp (which may have doubled per round trip) the overshoot can be up to 2x: halve,
    // as TCP does after slow start. Later cuts use beta.
    const factor = this.#cuts === 0 ? Math.min(this.#beta, 0.5) : this.#beta;
    this.#cuts += 1;
    this.#wMax = sending;
    this.#cutDepth = 1 - factor;
    // Near the plateau S3 still accepts most of what is sent: while it does, cut to just under what it
    // accepts rather than by beta, so a probe that touched the limit does not cost a deep dip.
    const accepted = this.#cuts === 1 ? 0 : 0.9 * Math.min(acceptedRate, sending);
    this.#rate = Math.max(1, sending * factor, accepted);
    this.#busyMs = 0;
    this.#lastCutAt = now;
    return this.#rate;
  }

  #advance(now: number, busy: boolean): void {
    if (this.#lastSampleAt !== undefined && busy) this.#busyMs += Math.max(0, now - this.#lastSampleAt);
    this.#lastSampleAt = now;
  }
}
