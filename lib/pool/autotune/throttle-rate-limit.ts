import type { ThrottleOptions } from './options.js';

/**
 * Convex probe past the plateau: +30% after one recovery period (2 s by default), +240% after two. Gentle
 * next to the last known good rate, so a probe that touches the service's limit overshoots it by a few percent.
 */
const PROBE_DEPTH = 0.3;

/**
 * Share of a slot each refusal takes off. Refusals come back one latency after the attempts they answer,
 * so for about one round trip the pool keeps oversending and every excess request is refused about twice
 * over (once while the pool has not reacted yet, once in the first-answer wave): half a slot each.
 */
const SLOT_SHARE = 0.5;

/**
 * A request rate that throttled answers steer. It starts at `initialRate` (a known limit, such as the
 * service's documented one) as a plateau, or, without a prior, unlimited until the first throttle or timeout,
 * which halves what was sent. Each throttle cuts (once per round trip by `beta`, then half a slot per refusal, never below
 * half of what was sent) and the rate it lands on is the new plateau: it holds there and then, while the
 * pool is busy, probes up along CUBIC's convex curve (the curve the AWS SDK's adaptive retry mode uses).
 * What counts as a throttle is the caller's word (the autotuner's `isThrottle`); this class sees only events.
 */
export class ThrottleRateLimit {
  readonly #beta: number;
  readonly #recoveryMs: number;
  #rate = Number.POSITIVE_INFINITY;
  #wMax = 0;
  /** Busy milliseconds since the last cut (the cubic curve's clock does not run while the pool idles). */
  #busyMs = 0;
  #lastSampleAt: number | undefined;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  /** Half of what was sent when this round trip's cut began: slot-by-slot cuts stop there. */
  #floor = 1;
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
      this.#busyMs = 0;
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
    // Flat next to the last known good rate, then steeper: a limit the service raised is found within seconds.
    const t = this.#busyMs / this.#recoveryMs;
    const cubic = this.#wMax * (1 + PROBE_DEPTH * t ** 3);
    // Never more than twice what was really sent: a rate the pool cannot use is no evidence of headroom.
    this.#rate = Math.max(1, Math.min(cubic, 2 * Math.max(sendingRate, this.#wMax * this.#beta)));
    return this.#rate;
  }

  /**
   * An attempt that started at `startedAt` was throttled (refused for load) or timed out. `slotRate` is the
   * rate one in-flight slot makes (1000 / mean latency in ms).
   *
   * Once per round trip (a throttle of an attempt started after the last cut) the rate drops to `beta` x
   * what was being sent. Every other throttle of that round trip takes one slot off the rate: the share of
   * attempts the service refuses is the share by which the pool oversends, so one slot per refusal lands the
   * rate on the service's limit within a round trip, however far the limit moved. A round trip never cuts below half of what
   * was sent. The result is the new plateau: the rate holds there and then probes up convexly.
   */
  onThrottle(now: number, startedAt: number, busy: boolean, sendingRate: number, slotRate = 0): number {
    this.#advance(now, busy);
    this.#throttles += 1;
    if (this.#wMax === 0) {
      // Leaving slow start (x2 per round trip) the overshoot is up to 2x and a burst allowance may hide the
      // limit: halve what was sent, as TCP does; the rest of that round trip's refusals are the same overshoot.
      const sending = Math.min(this.#rate, sendingRate);
      if (!(sending > 0 && Number.isFinite(sending))) return this.#rate;
      this.#cuts += 1;
      this.#rate = Math.max(1, sending / 2);
      this.#floor = this.#rate;
      this.#lastCutAt = now;
      this.#plateau();
      return this.#rate;
    }
    if (startedAt >= this.#lastCutAt) {
      // The cut is relative to what was really sent, which a pool capped by something else may keep below.
      const sending = Math.min(this.#rate, sendingRate);
      if (!(sending > 0 && Number.isFinite(sending))) return this.#rate;
      this.#cuts += 1;
      this.#floor = Math.max(1, sending / 2);
      this.#rate = Math.max(this.#floor, this.#beta * sending);
      this.#lastCutAt = now;
    } else {
      this.#rate = Math.max(this.#floor, this.#rate - SLOT_SHARE * slotRate);
    }
    this.#plateau();
    return this.#rate;
  }

  /** The rate just set is the last known good one: hold it, then probe past it (the convex half). */
  #plateau(): void {
    this.#wMax = this.#rate;
    this.#busyMs = 0;
  }

  #advance(now: number, busy: boolean): void {
    if (this.#lastSampleAt !== undefined && busy) this.#busyMs += Math.max(0, now - this.#lastSampleAt);
    this.#lastSampleAt = now;
  }
}
