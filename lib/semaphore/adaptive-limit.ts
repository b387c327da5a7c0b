import { InvalidSemaphoreOptionsError } from './errors.js';

/**
 * How an adaptive semaphore's limit follows what S3 accepts. The limit grows additively while holders
 * succeed and want more than they got, shrinks multiplicatively on SlowDown (once per round of leases), and
 * never exceeds Little's law with the fleet's measured latency: `ratePerSecond x latency x headroom`.
 * @example { ratePerSecond: 3500 } // S3_PREFIX_WRITE_RATE; everything else measured
 * @example { ratePerSecond: 50, initialLatencyMs: 40, decreaseFactor: 0.7, increaseStep: 1 }
 */
export interface AdaptiveLimitOptions {
  /** Operations per second the prefix may sustain (`S3_PREFIX_WRITE_RATE`): with the latency, the ceiling. */
  ratePerSecond: number;
  /**
   * Latency assumed before any lease has reported one (a brand-new semaphore), in ms.
   * @default 20
   */
  initialLatencyMs?: number;
  /**
   * Factor the limit is multiplied by, at least, when a lease saw more SlowDown answers than noise explains
   * (`TOLERATED_THROTTLE_SHARE`): a release whose lease saw a larger share refused shrinks by that share, down
   * to half. In (0, 1).
   * @default 0.7
   */
  decreaseFactor?: number;
  /**
   * Permits added per shard when a lease released without SlowDown answers and had wanted more than it got,
   * never more than an eighth of the current capacity (so a limit under one permit moves in fine steps).
   * @default 1
   */
  increaseStep?: number;
  /**
   * Weight of one lease's latency sample in the fleet's moving average, in (0, 1].
   * @default 0.3
   */
  latencyWeight?: number;
  /**
   * Ceiling over Little's law (`rate x latency`), >= 1. Above 1 the increase probes past the configured
   * rate and SlowDown answers stop it (more 503s); at 1 the configured rate is the ceiling and SlowDown
   * answers only bring the limit below it (S3 accepting less than configured).
   * @default 1
   */
  headroom?: number;
  /**
   * Permits granted per request in flight that Little's law gives for the rate, >= 1: the limit holds
   * `ratePerSecond x latency x inFlightSlack` permits and a grant stands for `permits / (latency x
   * inFlightSlack)` requests per second (`Lease.latencyMs` is `latency x inFlightSlack`). For holders that
   * pace their starts at that rate (the handler's pools): the extra permits let a slow answer not hold the
   * holder under its rate, since at exactly Little's law the cap on requests in flight binds whenever
   * answers are slower than their average (docs/decisions/first-lease-latency.md). Without pacing, slack
   * above 1 sends more than the rate.
   * @default 1
   * @example { ratePerSecond: 3500, inFlightSlack: 1.5 }
   */
  inFlightSlack?: number;
}

/** The adaptive state of one shard item, as stored in it (survives restarts of the whole fleet). */
export interface AdaptiveState {
  /** Permits this shard grants now (fractional, >= `MIN_CAPACITY`: grants are multiples of 1/1024). */
  readonly capacity: number;
  /** Moving average of permit-milliseconds per S3 attempt, as leases measured it. */
  readonly latencyMs: number;
  /** Epoch ms of the last multiplicative decrease (0: none yet). */
  readonly decreasedAt: number;
}

/** What one lease saw while it held its permits: reported with its release. */
export interface LeaseOutcome {
  /** Epoch ms the permits were granted and given back. */
  readonly takenAt: number;
  readonly releasedAt: number;
  /** Permits the lease held (across all its shards) and permits it asked for. */
  readonly permits: number;
  readonly wanted: number;
  /** Attempts that succeeded under the lease. */
  readonly succeeded: number;
  /** Attempts S3 answered with SlowDown (503) under the lease. */
  readonly throttled: number;
  /** Sum of the attempts' durations, ms, when the holder measured them (`LeaseUsage.attemptMs`). */
  readonly attemptMs?: number;
  /** Write requests among the attempts, when the holder counted them (`LeaseUsage.writes`). */
  readonly writes?: number;
  /** Share of its grant the holder's own SlowDown cuts left it at (`LeaseUsage.keptShare`). */
  readonly keptShare?: number;
}

/** The shard's next state and whether this step was a decrease (it then stamps `decreasedAt`). */
export interface AdaptiveStep extends AdaptiveState {
  readonly decreased: boolean;
}

export type ResolvedAdaptiveLimitOptions = Required<AdaptiveLimitOptions>;

const MIN_LATENCY_MS = 0.1;
/**
 * The least a shard grants: 1/64 of a permit. Below one permit a grant is a share of one slot's time (the
 * holder's pool rests between attempts: `ExecutorPool.setConcurrency` with a fraction), so a prefix whose
 * rate x latency is under 1 (50 writes/s at 15 ms: 0.75) is kept at its rate instead of at one whole
 * request in flight (66 writes/s, a quarter of them refused). Never 0: a prefix always progresses.
 */
export const MIN_CAPACITY = 1 / 64;
/**
 * The additive increase never exceeds this share of the current capacity, so a limit of a few permits or
 * less than one grows by at most 1/8 of itself per step (a whole permit would overshoot a 0.75-permit
 * prefix by 130%); from 8 permits up it is `increaseStep`.
 */
const MAX_INCREASE_SHARE = 1 / 8;
/**
 * For `CAUTIOUS_FOR_MS` after a decrease the increase is at most this share of the capacity instead: the
 * decrease found S3's limit just above, and an eighth per release would be back over it within two releases.
 * At 1/64 it takes about ten releases to climb back from a 0.85 cut, so the prefix runs near its limit
 * between rare probes. After that, probing resumes at the full pace (S3 may have scaled the prefix up).
 * Why 1/64: docs/decisions/throttle-response.md.
 */
export const CAUTIOUS_INCREASE_SHARE = 1 / 64;
/**
 * How long after a decrease the increase stays cautious (`CAUTIOUS_INCREASE_SHARE`), ms. Two minutes: S3
 * scales a prefix up over minutes, not seconds, and each return to the full pace overshoots the limit the
 * decrease found (docs/decisions/throttle-response.md).
 */
export const CAUTIOUS_FOR_MS = 120_000;
/**
 * Capacities are multiples of 1/1024: binary fractions add and subtract exactly in a double, and print as
 * exact decimals for DynamoDB, so `free` (sums of permits and deltas) never drifts to 0.9999999 and a
 * take of 1 permit never fails on rounding noise.
 */
export const CAPACITY_QUANTUM = 1 / 1024;

/** Rounds a capacity to the nearest multiple of the quantum. */
export function quantize(capacity: number): number {
  return Math.round(capacity / CAPACITY_QUANTUM) * CAPACITY_QUANTUM;
}
const MAX_LATENCY_MS = 60_000;
/**
 * SlowDown answers a lease may meet without the limit shrinking: one, or this share of its attempts when
 * that is more. A prefix held at its limit meets the odd 503 from latency noise alone (S3 admits bursts of a
 * fraction of a second), and one lease of a hot prefix makes tens to hundreds of attempts, so shrinking on
 * any single 503 keeps it well under its limit (docs/decisions/throttle-response.md). Between one tolerated
 * 503 and none the limit holds still (it grows only on leases S3 never refused).
 */
export const TOLERATED_THROTTLE_SHARE = 0.01;
/** The most one release rescales a shard's permits by when the fleet's latency moves (up or down). */
const MAX_RESCALE = 2;
/**
 * The most one resize moves a shard's latency (and its permits) up by. More than a release's `MAX_RESCALE`:
 * a resize is one holder's measured slot time over at least a few writes, asked for only when it is far
 * above the average, and the rate stays the same (capacity and latency move together). A cold fleet's
 * first writes can take several times the assumed slot time, and x2 leaves such a lease capped below its
 * rate for its whole batch (docs/decisions/first-lease-latency.md).
 */
const MAX_RESIZE = 4;
/** The most one release shrinks a shard by (a lease whose attempts were nearly all refused). */
const DEEPEST_DECREASE = 0.5;

/**
 * The requests S3's limit counts: the writes when the holder counted them (a prefix's reads have their own,
 * much higher, limit and are never refused at this one), else every attempt.
 */
function limitedRequests(outcome: Pick<LeaseOutcome, 'succeeded' | 'throttled' | 'writes'>): number {
  return outcome.writes ?? outcome.succeeded + outcome.throttled;
}

/** More SlowDowns than noise explains (`TOLERATED_THROTTLE_SHARE` of the limited requests). */
export function overloaded(outcome: Pick<LeaseOutcome, 'succeeded' | 'throttled' | 'writes'>): boolean {
  return outcome.throttled > Math.max(1, TOLERATED_THROTTLE_SHARE * limitedRequests(outcome));
}

export function resolveAdaptiveLimitOptions(options: AdaptiveLimitOptions): ResolvedAdaptiveLimitOptions {
  const resolved: ResolvedAdaptiveLimitOptions = {
    ratePerSecond: options.ratePerSecond,
    initialLatencyMs: options.initialLatencyMs ?? 20,
    decreaseFactor: options.decreaseFactor ?? 0.7,
    increaseStep: options.increaseStep ?? 1,
    latencyWeight: options.latencyWeight ?? 0.3,
    headroom: options.headroom ?? 1,
    inFlightSlack: options.inFlightSlack ?? 1,
  };
  const fail = (key: string, why: string) =>
    new InvalidSemaphoreOptionsError(
      `adaptive.${key} ${why}, got ${String(resolved[key as keyof typeof resolved])}`,
    );
  const finitePositive = (v: number) => Number.isFinite(v) && v > 0;
  if (!finitePositive(resolved.ratePerSecond)) throw fail('ratePerSecond', 'must be > 0');
  if (!finitePositive(resolved.initialLatencyMs)) throw fail('initialLatencyMs', 'must be > 0');
  if (!(resolved.decreaseFactor > 0 && resolved.decreaseFactor < 1))
    throw fail('decreaseFactor', 'must be in (0, 1)');
  if (!finitePositive(resolved.increaseStep)) throw fail('increaseStep', 'must be > 0');
  if (!(resolved.latencyWeight > 0 && resolved.latencyWeight <= 1))
    throw fail('latencyWeight', 'must be in (0, 1]');
  if (!(Number.isFinite(resolved.headroom) && resolved.headroom >= 1)) throw fail('headroom', 'must be >= 1');
  if (!(Number.isFinite(resolved.inFlightSlack) && resolved.inFlightSlack >= 1))
    throw fail('inFlightSlack', 'must be >= 1');
  return resolved;
}

/**
 * Little's law per shard: the permits one shard may grant so that all `shards` together carry
 * `ratePerSecond` at `latencyMs` per attempt, times the headroom and the in-flight slack; at least
 * `MIN_CAPACITY` (a prefix always progresses), possibly less than one permit.
 */
export function ceilingPerShard(
  latencyMs: number,
  shards: number,
  options: ResolvedAdaptiveLimitOptions,
): number {
  return Math.max(
    MIN_CAPACITY,
    (options.ratePerSecond * latencyMs * options.headroom * options.inFlightSlack) / 1000 / shards,
  );
}

/**
 * The state of a shard nobody has reported to yet: Little's law with the assumed latency, times the in-flight
 * slack (no headroom: the configured rate, not a probe past it).
 */
export function initialState(shards: number, options: ResolvedAdaptiveLimitOptions): AdaptiveState {
  const latencyMs = options.initialLatencyMs;
  const exact = (options.ratePerSecond * latencyMs * options.inFlightSlack) / 1000 / shards;
  // On the 1/1024 grid like every later capacity: whole permits would lose a fifth of a 2.5-permit prefix's
  // rate (50 writes/s x 50 ms rounded down to 2 permits carries 40 writes/s).
  return { capacity: quantize(Math.max(MIN_CAPACITY, exact)), latencyMs, decreasedAt: 0 };
}

/**
 * One step of the control law, for one shard the lease held permits on, from the state the releasing
 * holder last saw and what its lease did:
 * - latency: the lease's permit-milliseconds per limited request (`permits x held / n`, so permits held
 *   idle count as latency, which is what limits the rate a permit carries) into the moving average, the
 *   measured slot time when the holder reported it (`attemptMs / n`); `n` is the writes when the holder
 *   counted them (`writes`: a write's slot time then includes the read before it), else the attempts;
 * - the capacity moves with that average, so the rate it stands for (`capacity / latency`) stays: a limit
 *   is a rate, permits are how it is handed out (x2 / x0.5 at most per release);
 * - more SlowDown answers than noise explains (`overloaded`), and no decrease since this lease was granted:
 *   capacity x min(`decreaseFactor`, 1 - the share refused), never below half (a round of leases that all
 *   saw the same overload shrinks the limit once, not once per lease); one tolerated SlowDown holds it;
 * - no SlowDown, the lease wanted more than it got (holders wait for permits) and began after the last
 *   decrease: + `increaseStep` (at most 1/8 of the capacity; 1/64 for `CAUTIOUS_FOR_MS` after a decrease);
 * - always within `[MIN_CAPACITY, ceilingPerShard(latency)]`.
 * Pure and deterministic: the clock is in the outcome.
 */
export function adaptLimit(
  state: AdaptiveState,
  outcome: LeaseOutcome,
  shards: number,
  options: ResolvedAdaptiveLimitOptions,
): AdaptiveStep {
  // Per write when the holder counted them: a write's slot time includes the read before it (a conditional
  // write's GET), and the rate the limit stands for is the prefix's write rate. Per attempt otherwise.
  const limited = limitedRequests(outcome);
  const heldMs = Math.max(0, outcome.releasedAt - outcome.takenAt);
  let latencyMs = state.latencyMs;
  if (limited > 0 && outcome.permits > 0) {
    // Measured slot time when reported; else permit-ms (permits held idle count).
    // Permit-ms include the in-flight slack (permits held beyond Little's law), which is not latency.
    const sample =
      outcome.attemptMs !== undefined
        ? outcome.attemptMs / limited
        : (outcome.permits * heldMs) / limited / options.inFlightSlack;
    latencyMs = (1 - options.latencyWeight) * state.latencyMs + options.latencyWeight * sample;
    latencyMs = Math.min(MAX_LATENCY_MS, Math.max(MIN_LATENCY_MS, latencyMs));
  }
  // The limit is a rate (S3 limits requests per second) kept as permits: when the fleet's latency moves,
  // the permits move with it so each still carries the same rate (`capacity / latency`). Otherwise a
  // prefix whose writes take 50 ms where 20 were assumed runs at 40% of its rate until the additive
  // increase (an eighth per release) catches up, a release per batch later. At most x2 / x0.5 per release:
  // one stalled lease must not multiply the permits (the ceiling, rate x latency, moves with it).
  let capacity =
    state.capacity *
    Math.min(MAX_RESCALE, Math.max(1 / MAX_RESCALE, latencyMs / Math.max(MIN_LATENCY_MS, state.latencyMs)));
  let decreased = false;
  if (overloaded(outcome)) {
    if (outcome.takenAt > state.decreasedAt) {
      // In proportion to the share refused (a limit that halved refuses about half the attempts sent at
      // the old rate: one release brings the capacity near the new one), at least `decreaseFactor`.
      const refused = outcome.throttled / limited;
      // The holder's governor cut its own pool a step per round trip of SlowDowns while the release waited
      // for the lease to end: where it got to is the freshest measure of what S3 accepts, and a fixed step
      // per release follows a halved limit only over several releases (docs/decisions/throttle-response.md).
      const kept = outcome.keptShare ?? 1;
      capacity *= Math.max(DEEPEST_DECREASE, Math.min(options.decreaseFactor, 1 - refused, kept));
      decreased = true;
    }
  } else if (
    outcome.throttled === 0 &&
    outcome.wanted > outcome.permits &&
    // Some limited request got through (a lease that only read says nothing about room for writes).
    limited > outcome.throttled &&
    // A lease that began before the last decrease measured the old regime: it is no evidence of room now.
    outcome.takenAt > state.decreasedAt
  ) {
    const cautious = state.decreasedAt > 0 && outcome.releasedAt - state.decreasedAt < CAUTIOUS_FOR_MS;
    capacity += Math.min(
      options.increaseStep,
      (cautious ? CAUTIOUS_INCREASE_SHARE : MAX_INCREASE_SHARE) * capacity,
    );
  }
  capacity = quantize(
    Math.max(MIN_CAPACITY, Math.min(capacity, ceilingPerShard(latencyMs, shards, options))),
  );
  return {
    capacity,
    latencyMs,
    decreasedAt: decreased ? outcome.releasedAt : state.decreasedAt,
    decreased,
  };
}

/**
 * The step of a resize (`Lease.resize`, mid-lease): a holder whose work measured a slot time per limited
 * request (`sampleMs`) above the shard's average moves the average to it at once (at most x`MAX_RESIZE`),
 * and the capacity with it, so the limit stands for the same rate at the latency S3 shows now. A full-weight
 * step, unlike a release's moving average, because a holder asks only when the average is far below what it
 * measures (a new prefix's assumed latency, or S3 slowing down): at the average's pace the first lease of a
 * new prefix runs its whole batch below its rate (docs/decisions/first-lease-latency.md).
 * Overestimating the latency is safe: holders space their starts at the rate a grant stands for, and the
 * releases' average brings it back. `undefined` when the sample is not above the average: a resize only grows.
 */
export function rescaleForLatency(
  state: AdaptiveState,
  sampleMs: number,
  shards: number,
  options: ResolvedAdaptiveLimitOptions,
): AdaptiveState | undefined {
  if (!(sampleMs > state.latencyMs)) return undefined;
  const latencyMs = Math.min(MAX_LATENCY_MS, sampleMs, state.latencyMs * MAX_RESIZE);
  const capacity = quantize(
    Math.max(
      MIN_CAPACITY,
      Math.min(
        (state.capacity * latencyMs) / Math.max(MIN_LATENCY_MS, state.latencyMs),
        ceilingPerShard(latencyMs, shards, options),
      ),
    ),
  );
  return { capacity, latencyMs, decreasedAt: state.decreasedAt };
}
