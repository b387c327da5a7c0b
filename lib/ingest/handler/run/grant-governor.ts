import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import { MIN_CAPACITY } from '../../../semaphore/adaptive-limit.js';
import type { ConcurrencyTarget } from '../../../semaphore/with-permits.js';

/** What the governor steers (`ExecutorPool` fits): its concurrency and, when it can, the spacing of its starts. */
export interface GovernedTarget extends ConcurrencyTarget {
  /** Least ms between two attempt starts (0: none), see `ExecutorPool.setStartInterval`. */
  setStartInterval?(ms: number): void;
}

/** The pool events the governor listens to (`ExecutorPool` fits). */
export interface ThrottleEvents {
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
}

/**
 * Share of its grant a cut pool takes back per attempt S3 accepted that was sent after the last cut, after
 * its first cut of the lease; each further cut halves it. A prefix held at its limit meets the odd 503 from
 * latency noise alone, and without a way back each one would cut the rest of the lease for good (3 noise
 * 503s: 0.61 x the grant). From one cut (0.85) back to the grant takes 20 accepted attempts; faster, a pool
 * under a lower limit earns each cut back before the next. Halved per further cut because a pool that keeps
 * meeting SlowDown is above S3's limit, not unlucky (docs/decisions/throttle-response.md).
 */
export const RECOVERY_PER_ACCEPTED = 1 / 128;

/**
 * Share of its concurrency a pool keeps after S3 answered SlowDown under its lease, and the factor the
 * handler's prefix semaphores shrink by at a release that saw SlowDown (`decreaseFactor`). Gentler than
 * the semaphore's default 0.7, because a prefix held at its limit meets the odd 503 from latency noise alone
 * (S3 admits bursts of a fraction of a second); 0.85 still halves in four steps
 * (docs/decisions/throttle-response.md).
 */
export const GRANT_DECREASE_FACTOR = 0.85;

/**
 * The least share of its grant a paced pool keeps in flight when its attempts are quicker than the fleet's
 * (see `GrantGovernorOptions.latencyMs`). Bounded so that a burst of quick answers (cached, rejected early)
 * cannot park a pool at a sliver of its grant.
 */
export const MIN_PACE = 1 / 4;
/** Decay per attempt of the recent attempt and write counts (the read/write mix over ~the last 10 attempts). */
const MIX_DECAY = 0.9;
/** Weight of one attempt's duration in the holder's own latency average (about the last 5 attempts). */
const OWN_LATENCY_WEIGHT = 0.2;

/**
 * How the governor steers: the fleet latency the grant was sized with, and the clock.
 * @example { latencyMs: lease.latencyMs } // pace at the grant's rate: permits / latency
 */
export interface GrantGovernorOptions {
  /**
   * The fleet's latency per attempt the grant was sized with (`Lease.latencyMs`): the grant then stands for
   * `permits / latencyMs` attempts per second. While this holder's own attempts are quicker than that, the
   * governor keeps `permits x (own latency / latencyMs)` in flight (at least `MIN_PACE` x), so it sends the
   * rate its grant stands for and not more: at a fixed in-flight count a holder whose writes take 10 ms
   * where the fleet's take 25 would send 2.5x its share and meet SlowDowns. Never more than the grant in flight
   * when its attempts are slower: the permits are a cap on requests in flight (the chaos suite checks it),
   * and a slower fleet is followed by the limit itself (its permits move with the measured latency).
   * @default undefined (no pacing: the grant is the in-flight count)
   */
  latencyMs?: number;
  /**
   * The write requests this holder has sent so far under the lease, when it counts them: then `latencyMs`
   * is the fleet's slot time per write (`LeaseUsage.writes`), and the holder compares its own slot time per
   * write with it (its attempt latency x attempts / writes), so the reads sharing its slots (a conditional
   * write's GET) do not make it look quicker than the fleet. No pacing until a write is counted.
   * @default undefined (every attempt is a write)
   */
  writes?: () => number;
  /** @default () => performance.now() */
  now?: () => number;
}

/**
 * The fast loop inside one lease. The fleet-wide limit moves only when leases are released, and a lease
 * lasts as long as its tenant's writes (seconds): when S3's limit drops meanwhile (a re-partition, another
 * workload on the prefix), the holder would keep sending at its grant and collect 503s until it gives the
 * permits back. So on SlowDown the holder cuts its own pool to 0.85 x what it ran at, once per round trip
 * (only a throttled attempt that started after the last cut cuts again: the others were sent at the old
 * rate), never below `MIN_CAPACITY`, and takes back `RECOVERY_PER_ACCEPTED` of the grant (halved per
 * further cut) per attempt S3 accepts after a cut. It never grows past the grant: only the fleet's limit, moved by the release that
 * reports these throttles, grows. With `latencyMs` it also paces: see `GrantGovernorOptions.latencyMs`.
 */
export class GrantGovernor {
  /** The grant as cut and recovered (in permits at the fleet's latency). */
  #concurrency: number;
  /** What the target was last set to: `#concurrency` x the pace. */
  #applied: number;
  /** What the target's start interval was last set to (ms; NaN: never). */
  #interval = Number.NaN;
  #ownLatencyMs: number | undefined;
  /** Recent attempts and writes (decayed by `MIX_DECAY` per attempt): the pool's mix of reads and writes now. */
  #recentAttempts = 0;
  #recentWrites = 0;
  #writesSeen = 0;
  readonly #writes: (() => number) | undefined;
  #lastCutAt = Number.NEGATIVE_INFINITY;
  #cuts = 0;
  #grant: number;
  #fleetLatencyMs: number | undefined;
  readonly #now: () => number;
  readonly #onError = (e: PoolEvents['pool:taskError']): void => {
    if (!isThrottling(e.error)) return;
    this.#observe(e.durationMs);
    const now = this.#now();
    if (now - e.durationMs < this.#lastCutAt) {
      this.#apply();
      return;
    }
    this.#lastCutAt = now;
    this.#cuts += 1;
    this.#concurrency = Math.max(MIN_CAPACITY, this.#concurrency * GRANT_DECREASE_FACTOR);
    this.#apply();
  };
  readonly #onCompleted = (e: PoolEvents['pool:taskCompleted']): void => {
    this.#observe(e.durationMs);
    // Sent before the last cut: it says nothing about the rate the pool runs at now.
    if (this.#concurrency < this.#grant && this.#now() - e.durationMs >= this.#lastCutAt) {
      this.#concurrency = Math.min(
        this.#grant,
        this.#concurrency + (this.#grant * RECOVERY_PER_ACCEPTED) / 2 ** Math.max(0, this.#cuts - 1),
      );
    }
    this.#apply();
  };

  /** Starts at `grant` (the target is expected to run at it already) and listens to `events`. */
  constructor(
    private readonly target: GovernedTarget,
    private readonly events: ThrottleEvents,
    grant: number,
    options: GrantGovernorOptions = {},
  ) {
    this.#concurrency = grant;
    this.#applied = grant;
    this.#grant = grant;
    const latency = options.latencyMs;
    const usable = latency !== undefined && Number.isFinite(latency) && latency > 0;
    this.#fleetLatencyMs = usable ? latency : undefined;
    this.#now = options.now ?? (() => performance.now());
    this.#writes = options.writes;
    this.#space();
    events.on('pool:taskError', this.#onError);
    events.on('pool:taskCompleted', this.#onCompleted);
  }

  /** The grant as cut and recovered, in permits (what the target runs at, before the pace). */
  get concurrency(): number {
    return this.#concurrency;
  }

  /** What the target runs at now: the concurrency x the pace (1 without pacing or when slower than the fleet). */
  get inFlightCap(): number {
    return this.#applied;
  }

  /**
   * Share of the grant it steers that the cuts left (`LeaseUsage.keptShare`): of the grant it was given or
   * regranted, not of the lease's permits now (a resize that landed after the work ended grew those
   * without a regrant, and old / new permits reported a cut that never happened).
   */
  get keptShare(): number {
    // A pool that had no grant to cut (0 permits) kept all of it (a regrant starts the new one whole).
    return this.#grant > 0 ? this.#concurrency / this.#grant : 1;
  }

  /** Cuts made under this lease. */
  get cuts(): number {
    return this.#cuts;
  }

  /**
   * The lease was resized (`Lease.resize`): the same share of the grant as cut, now of `grant`, paced at the
   * fleet latency the resize moved it to (ignored when not usable, as at construction).
   */
  regrant(grant: number, latencyMs: number | undefined): void {
    const share = this.keptShare;
    this.#grant = grant;
    this.#concurrency = Math.max(MIN_CAPACITY, grant * share);
    // Only a pool paced before is paced now, and only by a latency it can pace by.
    if (this.#fleetLatencyMs !== undefined && (latencyMs ?? 0) > 0 && Number.isFinite(latencyMs))
      this.#fleetLatencyMs = latencyMs;
    this.#apply();
  }

  stop(): void {
    this.events.off('pool:taskError', this.#onError);
    this.events.off('pool:taskCompleted', this.#onCompleted);
    // The pool outlives the lease (warm containers): its next work may hold no grant, or another one.
    if (this.#fleetLatencyMs !== undefined) this.target.setStartInterval?.(0);
  }

  #observe(durationMs: number): void {
    if (this.#fleetLatencyMs === undefined || !(durationMs >= 0)) return;
    if (this.#writes !== undefined) {
      const writes = this.#writes();
      this.#recentAttempts = MIX_DECAY * this.#recentAttempts + 1;
      this.#recentWrites = MIX_DECAY * this.#recentWrites + (writes - this.#writesSeen);
      this.#writesSeen = writes;
    }
    this.#ownLatencyMs =
      this.#ownLatencyMs === undefined
        ? durationMs
        : (1 - OWN_LATENCY_WEIGHT) * this.#ownLatencyMs + OWN_LATENCY_WEIGHT * durationMs;
  }

  /** Own slot time per limited request: per attempt, or per write when writes are counted (none yet: unknown). */
  #ownSlotMs(): number | undefined {
    const own = this.#ownLatencyMs;
    if (own === undefined || this.#writes === undefined) return own;
    const perWrite = this.#attemptsPerWrite();
    return perWrite === undefined ? undefined : own * perWrite;
  }

  /**
   * Attempts per write in the pool's recent mix (>= 1); undefined while no write was counted. Recent, not
   * since the lease began: a Database reads before writing until it learns its records are new, then
   * writes blind, and a ratio from the reads of its first second would space its blind writes too close.
   */
  #attemptsPerWrite(): number | undefined {
    if (!(this.#recentWrites > 0)) return undefined;
    return Math.max(1, this.#recentAttempts / this.#recentWrites);
  }

  #apply(): void {
    const fleet = this.#fleetLatencyMs;
    const own = this.#ownSlotMs();
    // A target that spaces its starts (`#space`) is held at the grant's rate by the spacing, so its
    // in-flight count is not paced down too: both together kept it under its rate whenever an answer was
    // slower than the average the pace was computed from.
    const spaced = this.target.setStartInterval !== undefined;
    const pace =
      fleet === undefined || own === undefined || spaced ? 1 : Math.min(1, Math.max(MIN_PACE, own / fleet));
    const next = Math.max(MIN_CAPACITY, this.#concurrency * pace);
    this.#space();
    if (next === this.#applied) return;
    this.#applied = next;
    this.target.setConcurrency(next);
  }

  /**
   * Spaces the pool's starts at the rate the grant (as cut) stands for: `concurrency / fleet latency`
   * limited requests per ms. The pool spaces only those: a Database enqueues its reads unpaced
   * (`EnqueueOptions.paced`), so the interval is per write whatever the mix. S3 admits only a fraction of a
   * second of a prefix's rate in a burst, and quick answers free several slots at once; evenly spaced starts
   * are not refused (docs/decisions/paced-writes-unpaced-reads.md).
   */
  #space(): void {
    const fleet = this.#fleetLatencyMs;
    if (fleet === undefined || this.target.setStartInterval === undefined) return;
    const interval = fleet / this.#concurrency;
    if (interval === this.#interval) return;
    this.#interval = interval;
    this.target.setStartInterval(interval);
  }
}
