import { totalmem } from 'node:os';
import type { TunablePool, TunerCompanion } from '../companions.js';
import type { PoolEvents } from '../events.js';
import type { PoolStats } from '../pool-metrics.js';
import { isCongestionSignal } from './congestion-signal.js';
import { GradientLimit } from './gradient-limit.js';
import { MemoryCap } from './memory-cap.js';
import {
  type AutotuneOptions,
  defaultMemoryBudget,
  type ResolvedAutotuneOptions,
  resolveAutotuneOptions,
} from './options.js';
import { RateMeter } from './rate-meter.js';
import { ThrottleRateLimit } from './throttle-rate-limit.js';

export type { TunablePool } from '../companions.js';

/** Where a pool with `concurrency: 'auto'` starts when `initialConcurrency` is not given: the pool's default. */
const AUTO_INITIAL_CONCURRENCY = 10;

/**
 * Adaptive concurrency for `ExecutorPoolOptions.autotune`: each pool it is given to gets an Autotuner of its
 * own, attached at construction and detached by `stop()`. With `concurrency: 'auto'` the pool starts at
 * `initialConcurrency` (default 10), else at its numeric `concurrency`.
 * @example new ExecutorPool({ concurrency: 'auto', autotune: autotune({ maxConcurrency: 200 }) })
 */
export function autotune(options: AutotuneOptions = {}): TunerCompanion {
  // Resolved here too, so bad options fail where they are written, before any pool exists.
  const { maxConcurrency } = resolveAutotuneOptions(options);
  return {
    initialConcurrency: options.initialConcurrency ?? AUTO_INITIAL_CONCURRENCY,
    maxConcurrency,
    attachTuner: (pool) => new Autotuner(pool, options),
  };
}

/** The autotuner's view, for metrics, charts and tests. */
export interface AutotuneState {
  /** The concurrency it set: the minimum of the three limits below, within the bounds. */
  limit: number;
  /** Latency-gradient limit. */
  gradientLimit: number;
  /** Allowed requests per second for the pool (`Infinity` until the first throttle). */
  rateLimit: number;
  /** `rateLimit` as a concurrency (Little's law: rate x mean latency). */
  rateConcurrency: number;
  /** Memory cap (`Infinity` until measured). */
  memoryCap: number;
  /** Long- and short-term mean latency of first attempts, ms. */
  longRttMs: number;
  shortRttMs: number;
  /** Throttle/timeout signals seen, and the rate cuts they caused (at most one per round trip). */
  throttles: number;
  cuts: number;
}

/**
 * Adaptive concurrency for an ExecutorPool. Per completed attempt (no timer) it takes the minimum of
 * (a) a latency-gradient limit fed by first attempts only, (b) a request rate that throttled answers
 * (`isThrottle`) and timeouts cut and busy time grows back (CUBIC), turned into a concurrency by Little's law
 * (rate x mean latency), and (c) a memory cap; bounds it to [minConcurrency, maxConcurrency]; and calls
 * `pool.setConcurrency` when the result changes. See docs/autotune.md.
 */
export class Autotuner {
  readonly #pool: TunablePool;
  readonly #options: ResolvedAutotuneOptions;
  readonly #now: () => number;
  readonly #gradient: GradientLimit;
  readonly #rate: ThrottleRateLimit;
  readonly #memory: MemoryCap;
  readonly #meter = new RateMeter();
  readonly #isThrottle: (error: unknown) => boolean;
  /** Mean latency of every attempt, for Little's law before a first attempt has succeeded. */
  #anyRtt = 0;
  #limit: number;
  #attached = true;

  readonly #onCompleted = (e: PoolEvents['pool:taskCompleted']): void => {
    const now = this.#now();
    const stats = this.#pool.getStats();
    const inFlight = stats.activeCount + 1;
    this.#observeRtt(e.durationMs);
    this.#meter.record(now, true);
    if (e.attempt === 1) this.#gradient.onSample(e.durationMs, inFlight);
    this.#rate.onSuccess(now, this.#isBusy(stats), this.#sendingRate(now, inFlight));
    // With a starting rate (a service's documented limit), start at its Little's-law concurrency as soon as
    // the first latencies are in, rather than ramping up to it.
    if (this.#gradient.slowStart && this.#gradient.warmedUp) this.#gradient.raiseTo(this.#rateConcurrency());
    this.#memory.onSample(now, inFlight);
    this.#apply();
  };

  readonly #onError = (e: PoolEvents['pool:taskError']): void => {
    if (!this.#isThrottle(e.error)) return;
    const now = this.#now();
    this.#observeRtt(e.durationMs);
    this.#meter.record(now, false);
    const stats = this.#pool.getStats();
    this.#gradient.endSlowStart();
    // The throttled attempt has left the pool already; it was sending with the others.
    this.#rate.onThrottle(
      now,
      now - e.durationMs,
      this.#isBusy(stats),
      this.#sendingRate(now, stats.activeCount + 1),
      1000 / this.#meanRtt(),
    );
    this.#apply();
  };

  constructor(pool: TunablePool, options: AutotuneOptions = {}) {
    this.#pool = pool;
    const o = resolveAutotuneOptions(options);
    this.#options = o;
    this.#now = options.now ?? (() => performance.now());
    this.#isThrottle = options.isThrottle ?? isCongestionSignal;
    const initial = options.initialConcurrency ?? pool.concurrency;
    this.#limit = Math.min(o.maxConcurrency, Math.max(o.minConcurrency, initial));
    this.#gradient = new GradientLimit({
      ...o.gradient,
      initialLimit: this.#limit,
      minLimit: o.minConcurrency,
      maxLimit: o.maxConcurrency,
      targetLatency: o.targetLatency,
    });
    this.#rate = new ThrottleRateLimit(o.throttle);
    this.#memory = new MemoryCap({
      targetPercent: o.targetMemoryPercent,
      budgetBytes: options.memoryBudgetBytes ?? defaultMemoryBudget(process.env, totalmem()),
      usage: options.memoryUsage ?? (() => process.memoryUsage.rss()),
    });
    pool.on('pool:taskCompleted', this.#onCompleted);
    pool.on('pool:taskError', this.#onError);
    if (o.enabled && pool.concurrency !== this.#limit) pool.setConcurrency(this.#limit);
  }

  /** The concurrency the tuner wants now. */
  get limit(): number {
    return this.#limit;
  }

  get options(): ResolvedAutotuneOptions {
    return this.#options;
  }

  state(): AutotuneState {
    return {
      limit: this.#limit,
      gradientLimit: this.#gradient.limit,
      rateLimit: this.#rate.rate,
      rateConcurrency: this.#rateConcurrency(),
      memoryCap: this.#memory.cap,
      longRttMs: this.#gradient.longRtt,
      shortRttMs: this.#gradient.shortRtt,
      ...this.#rate.counts,
    };
  }

  /** Stops listening; the pool keeps its current concurrency. */
  detach(): void {
    if (!this.#attached) return;
    this.#attached = false;
    this.#pool.off('pool:taskCompleted', this.#onCompleted);
    this.#pool.off('pool:taskError', this.#onError);
  }

  #isBusy(stats: PoolStats): boolean {
    return stats.queueSize > 0 || stats.activeCount >= this.#pool.concurrency;
  }

  #observeRtt(ms: number): void {
    this.#anyRtt = this.#anyRtt === 0 ? ms : this.#anyRtt + (ms - this.#anyRtt) / 100;
  }

  #meanRtt(): number {
    return this.#gradient.longRtt > 0 ? this.#gradient.longRtt : this.#anyRtt;
  }

  /**
   * Requests per second the pool sends: measured completions (RateMeter), but no more than `inFlight`
   * attempts make at the mean latency (Little's law), which follows a cut at once where the meter lags.
   */
  #sendingRate(now: number, inFlight: number): number {
    const rtt = this.#meanRtt();
    const measured = this.#meter.read(now).attempts;
    if (!(rtt > 0)) return measured;
    return Number.isFinite(measured) ? Math.min(measured, (inFlight * 1000) / rtt) : (inFlight * 1000) / rtt;
  }

  #rateConcurrency(): number {
    const rate = this.#rate.rate;
    if (rate === Number.POSITIVE_INFINITY) return rate;
    return (rate * this.#meanRtt()) / 1000;
  }

  #apply(): void {
    const wanted = Math.min(this.#gradient.limit, this.#rateConcurrency(), this.#memory.cap);
    const o = this.#options;
    this.#limit = Math.min(o.maxConcurrency, Math.max(o.minConcurrency, Math.round(wanted)));
    if (o.enabled && this.#attached && this.#pool.concurrency !== this.#limit) {
      this.#pool.setConcurrency(this.#limit);
    }
  }
}
