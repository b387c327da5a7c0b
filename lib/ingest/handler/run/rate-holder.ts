import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import type { RateBudget, RateLease } from '../../../semaphore/rate-types.js';
import { INCREASE_SHARE } from '../../../semaphore/tuning.js';
import { drainBy } from './drain-by.js';
import type { WriteWatch } from './prefix-write-counts.js';
import { type PacedTarget, RatePace, type RefusalEvents } from './rate-pace.js';

/** Builds the budget of one prefix, `(name, ceiling) => RateBudget`; called again after a cache eviction. */
export type RateBudgetFactory = (name: string, ceiling: number) => RateBudget;

/** A tenant's pool as a rate holder steers it (`ExecutorPool` fits). */
export interface RateHolderPool extends PacedTarget, RefusalEvents {
  setConcurrency(n: number): void;
  drain?(): Promise<void>;
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
}

/** One tenant's writes in this invocation, as its holder sees them. */
export interface RateHolderRequest {
  readonly pool: RateHolderPool;
  /** Writes the tenant has to make (records, not attempts). */
  readonly writes: number;
  /** Requests in flight the pool may have: its concurrency while it holds the lease. */
  readonly inFlight: number;
  /** The longest it waits for its rate (a tenant whose records can be deferred). @default half the time left */
  readonly maxWaitMs?: number | undefined;
  /**
   * Writes per second this container's last lease of the prefix delivered when that was less than it was
   * granted (`HolderResult.delivered`): it asks for no more than that plus one increase step (but what it
   * needs to finish), so it does not hold rate its pool cannot send.
   * @default undefined (no cap: a first lease, or one whose last lease kept its pace)
   */
  readonly delivered?: number | undefined;
}

/** The invocation's bounds on a holder. */
export interface RateWindow {
  /** Epoch ms: the invocation's cutoff. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** Lease length: the invocation's remaining time plus a margin (no heartbeats). */
  readonly leaseMs: number;
  /** How long giving the rate back may take after the work. */
  readonly releaseTimeoutMs: number;
}

/**
 * What a holder did: it ran at `rate` writes/s (`releaseError`: its release failed; the lease expires by
 * itself and nothing about the writes changes), or could not have a rate (`outOfTurn`: others held it).
 */
export type HolderResult =
  | {
      readonly rate: number;
      /** Writes per second the lease delivered: writes sent over the time from the grant to the drain. */
      readonly delivered: number;
      readonly releaseError?: unknown;
    }
  | { readonly unavailable: unknown; readonly outOfTurn?: true };

/** Attempts the pool settled while a lease was held: a count of writes when the store counts none. */
class AttemptCount {
  count = 0;
  readonly #completed = () => {
    this.count++;
  };
  readonly #failed = (e: PoolEvents['pool:taskError']) => {
    if (isThrottling(e.error)) this.count++;
  };

  constructor(private readonly pool: RateHolderPool) {
    pool.on('pool:taskCompleted', this.#completed);
    pool.on('pool:taskError', this.#failed);
  }

  stop(): void {
    this.pool.off('pool:taskCompleted', this.#completed);
    this.pool.off('pool:taskError', this.#failed);
  }
}

/**
 * One tenant's writes under a share of its prefix's budget (docs/fleet-cap.md, "What a holder does"): ask
 * for the whole ceiling (one pacer at a time: the next holder sleeps until this one's due), no more than
 * its pool delivered last time it fell behind, and at least the rate that finishes its writes in the time
 * left after its wait (at most half the time left); pace the pool at the grant (cut per round on refusals,
 * `RatePace`), drain, and release with what the lease saw. `writes` counts the prefix's write requests
 * (from the container's store) when given, else every settled attempt counts as a write.
 */
export async function runUnderRate(
  budget: RateBudget,
  request: RateHolderRequest,
  window: RateWindow,
  writes: WriteWatch | undefined,
  body: () => Promise<void>,
  now: () => number = Date.now,
): Promise<HolderResult> {
  const start = now();
  const leftMs = Math.max(2, window.deadline - start);
  // It waits at most half the time left (less with a turn wait), and a grant taken then must finish its
  // writes in what remains.
  const waitMs = Math.min(request.maxWaitMs ?? leftMs / 2, leftMs / 2);
  const needed = (request.writes * 1000) / (leftMs - waitMs);
  // All the budget it can get: a prefix written by one paced holder at a time sees no bursts from holders
  // whose starts coincide. But no more than its pool delivered last time plus one step of the law's
  // additive increase (it probes upward as the budget does), and never less than it needs to finish.
  const pooled =
    request.delivered === undefined
      ? Number.POSITIVE_INFINITY
      : request.delivered + budget.ceiling * INCREASE_SHARE;
  const want = Math.min(budget.ceiling, Math.max(needed, pooled));
  const least = Math.min(want, needed);
  const deadline = start + waitMs;
  let lease: RateLease;
  try {
    lease = await budget.take(want, {
      least,
      deadline,
      signal: window.signal,
      leaseMs: window.leaseMs,
      writes: request.writes,
    });
  } catch (err) {
    writes?.stop();
    // Out of time, aborted, or the store unreachable: only this tenant's writes are redelivered.
    if (window.signal.aborted)
      return { unavailable: new SemaphoreTimeoutError(budget.name, least, deadline) };
    return err instanceof SemaphoreTimeoutError
      ? { unavailable: err, outOfTurn: true }
      : { unavailable: err };
  }
  const attempts = writes === undefined ? new AttemptCount(request.pool) : undefined;
  const sent = () => writes?.count ?? attempts?.count ?? 0;
  // Writes start at most `rate` per second (reads are not paced: the store enqueues them unpaced), cut
  // within the lease when S3 refuses more than noise.
  const pace = new RatePace(request.pool, request.pool, lease.rate, budget.ceiling, sent);
  let releaseError: unknown;
  let released = true;
  let drainedAt: number | undefined;
  try {
    request.pool.setConcurrency(Math.max(1, request.inFlight));
    await body();
    // No write outlives its lease: in-flight (and timed-out, still settling) work ends first.
    await drainBy(request.pool, window.signal, window.releaseTimeoutMs);
    drainedAt = now();
  } finally {
    pace.stop();
    attempts?.stop();
    writes?.stop();
    const { throttled } = pace;
    const report = {
      accepted: Math.max(0, sent() - throttled),
      throttled,
      // Granted less than it asked. Not "took time": every grant is stamped after the take's read.
      starved: lease.rate < want,
    };
    try {
      // Released after the cutoff too (the rate is handed back for others), but bounded: a stalled store
      // cannot hold the invocation; the lease expires by itself.
      await lease.release(report, { signal: AbortSignal.timeout(window.releaseTimeoutMs) });
    } catch (error) {
      released = false;
      releaseError = error;
    }
  }
  const delivered = sent() / Math.max(0.001, ((drainedAt ?? now()) - lease.takenAt) / 1000);
  return released ? { rate: lease.rate, delivered } : { rate: lease.rate, delivered, releaseError };
}
