import { isThrottling } from '../../errors/classify.js';
import type { PoolEvents } from '../../pool/events.js';
import { MIN_CAPACITY } from '../../semaphore/adaptive-limit.js';
import type { ConcurrencyTarget } from '../../semaphore/with-permits.js';

/** The pool events the governor listens to (`ExecutorPool` fits). */
export interface ThrottleEvents {
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
}

/**
 * Share of its grant a cut pool takes back per attempt S3 accepted that was sent after the last cut. A
 * prefix held at its limit meets the odd 503 from latency noise alone; without a way back, each one cut the
 * rest of a lease of ~100 attempts for good (3 noise 503s: 0.61 x the grant). From one cut (0.85) back to
 * the grant takes 20 accepted attempts. Not faster: at 1/32 a holder refused a third of the time (a halved
 * limit) earned back most of each cut before the next one and stayed there (bench:load: 30% 503s for 5 s).
 */
export const RECOVERY_PER_ACCEPTED = 1 / 128;

/**
 * Share of its concurrency a pool keeps after S3 answered SlowDown under its lease, and the factor the
 * handler's prefix semaphores shrink by at a release that saw SlowDown (`decreaseFactor`). Gentler than
 * the semaphore's default 0.7: a prefix held at its limit meets the odd 503 from latency noise alone (S3
 * admits bursts of a fraction of a second), and at 0.7 those cut a hot prefix to a third of its limit in
 * bench:load limit-bound; 0.85 still halves in four steps.
 */
export const GRANT_DECREASE_FACTOR = 0.85;

/**
 * The fast loop inside one lease. The fleet-wide limit moves only when leases are released, and a lease
 * lasts as long as its tenant's writes (seconds): when S3's limit drops meanwhile (a re-partition, another
 * workload on the prefix), the holder would keep sending at its grant and collect 503s until it gives the
 * permits back. So on SlowDown the holder cuts its own pool to 0.85 x what it ran at, once per round trip
 * (only a throttled attempt that started after the last cut cuts again: the others were sent at the old
 * rate), never below `MIN_CAPACITY`, and takes back `RECOVERY_PER_ACCEPTED` of the grant per attempt S3
 * accepts after a cut. It never grows past the grant: only the fleet's limit, moved by the release that
 * reports these throttles, grows.
 */
export class GrantGovernor {
  #concurrency: number;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  #cuts = 0;
  readonly #grant: number;
  readonly #onError = (e: PoolEvents['pool:taskError']): void => {
    if (!isThrottling(e.error)) return;
    const now = this.now();
    if (now - e.durationMs < this.#lastCutAt) return;
    this.#lastCutAt = now;
    this.#cuts += 1;
    this.#concurrency = Math.max(MIN_CAPACITY, this.#concurrency * GRANT_DECREASE_FACTOR);
    this.target.setConcurrency(this.#concurrency);
  };
  readonly #onCompleted = (e: PoolEvents['pool:taskCompleted']): void => {
    if (this.#concurrency >= this.#grant) return;
    // Sent before the last cut: it says nothing about the rate the pool runs at now.
    if (this.now() - e.durationMs < this.#lastCutAt) return;
    this.#concurrency = Math.min(this.#grant, this.#concurrency + this.#grant * RECOVERY_PER_ACCEPTED);
    this.target.setConcurrency(this.#concurrency);
  };

  /** Starts at `grant` (the target is expected to run at it already) and listens to `events`. */
  constructor(
    private readonly target: ConcurrencyTarget,
    private readonly events: ThrottleEvents,
    grant: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.#concurrency = grant;
    this.#grant = grant;
    events.on('pool:taskError', this.#onError);
    events.on('pool:taskCompleted', this.#onCompleted);
  }

  /** What the target runs at now. */
  get concurrency(): number {
    return this.#concurrency;
  }

  /** Cuts made under this lease. */
  get cuts(): number {
    return this.#cuts;
  }

  stop(): void {
    this.events.off('pool:taskError', this.#onError);
    this.events.off('pool:taskCompleted', this.#onCompleted);
  }
}
