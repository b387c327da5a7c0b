import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LRUCache } from 'lru-cache';
import { isThrottling } from '../../errors/classify.js';
import type { PoolEvents } from '../../pool/events.js';
import { AdaptiveDynamoSemaphore } from '../../semaphore/adaptive-dynamo-semaphore.js';
import { DynamoSemaphore } from '../../semaphore/dynamo-semaphore.js';
import { SemaphoreTimeoutError } from '../../semaphore/errors.js';
import { permitsFor } from '../../semaphore/permits-for.js';
import type { Lease, LeaseUsage, Semaphore } from '../../semaphore/types.js';
import type { ConcurrencyTarget } from '../../semaphore/with-permits.js';
import type { IngestConfig } from '../config.js';
import { GRANT_DECREASE_FACTOR, GrantGovernor } from './grant-governor.js';

/** The S3 write latency the permits are sized for (Little's law: 3,500 PUT/s x 20 ms = 70 in flight). */
export const ASSUMED_WRITE_LATENCY_MS = 20;
/**
 * Tenants with fewer writes than this in a batch share one bucket-level lease instead of each paying two
 * DynamoDB writes for their own: a prefix that receives a handful of writes is in no danger of SlowDown,
 * and per-tenant leases would cost as many DynamoDB writes as S3 writes.
 */
export const SMALL_TENANT_WRITES = 10;
/** One stripe of the small tenants' shared semaphore caps its in-flight writes at this many prefixes' worth. */
export const SMALL_TENANTS_PREFIX_SHARE = 4;
/**
 * Small tenants share one of this many striped semaphores (each its own partition key), picked at random
 * per invocation: no single lease or partition caps the fleet's small-tenant writes (16 x 280 permits at
 * the default rate), and a batch's small tenants still cost one acquire and one release, as before.
 */
export const SMALL_TENANT_STRIPES = 16;

/**
 * Longest wait between two acquire rounds on a tenant prefix's semaphore. A hot prefix whose limit is a
 * permit or less is held by one invocation at a time, and the next holder learns that it is free only by
 * reading again: at the default 500 ms cap the hand-over gaps left the prefix idle a quarter of the time
 * (bench:load limit-bound). Each round is one strongly consistent read (1 RCU), not a write.
 */
export const PREFIX_ACQUIRE_BACKOFF_CAP_MS = 100;

/**
 * How long giving permits back may take, whether a release after the work or the give-back of an aborted
 * acquire: a quarter of `DEADLINE_MARGIN_MS`. After the cutoff the margin is spent as: give-backs (this),
 * then dead letters (until half the margin, `settleMs`), then the response, so the invocation answers
 * before Lambda's timeout when DynamoDB or SQS stalls. Pass it to `DynamoSemaphore`'s `giveBackTimeoutMs`.
 */
export function releaseTimeoutMs(config: IngestConfig): number {
  return Math.max(1, Math.floor(config.deadlineMarginMs / 4));
}

/** How long after the cutoff the dead letters may still be sent: half of `DEADLINE_MARGIN_MS`. */
export function settleMs(config: IngestConfig): number {
  return Math.max(1, Math.floor(config.deadlineMarginMs / 2));
}

/**
 * How a tenant prefix's fleet-wide limit is kept: `adaptive` follows what S3 accepts (the limit lives in
 * the shard items, moved by every release; `AdaptiveDynamoSemaphore`), `static` is `S3_PREFIX_WRITE_RATE`
 * x 20 ms for ever (`DynamoSemaphore`).
 */
export type PrefixLimitMode = 'adaptive' | 'static';

/**
 * The DynamoDB semaphores of the handler. Tenant prefixes (`prefix:` names) get an adaptive semaphore
 * whose hard cap is the rate x 1 s (it starts at the 20 ms sizing and follows measured latency and
 * SlowDowns below that); the small tenants' stripes keep a static one: their prefixes see a handful of
 * writes each, and a group of small tenants needs a permit per tenant, which a shrinking limit could starve.
 */
export function dynamoSemaphores(
  config: IngestConfig,
  client: DynamoDBClient,
  tableName: string,
  mode: PrefixLimitMode = 'adaptive',
): SemaphoreFactory {
  const giveBackTimeoutMs = releaseTimeoutMs(config);
  return (name, limit, ratePerSecond) => {
    if (mode === 'static' || !name.startsWith('prefix:')) {
      return new DynamoSemaphore({ client, tableName, name, limit, giveBackTimeoutMs });
    }
    const rate = ratePerSecond ?? config.s3PrefixWriteRate;
    return new AdaptiveDynamoSemaphore({
      client,
      tableName,
      name,
      limit: Math.max(limit, Math.ceil(rate)),
      adaptive: {
        ratePerSecond: rate,
        initialLatencyMs: ASSUMED_WRITE_LATENCY_MS,
        decreaseFactor: GRANT_DECREASE_FACTOR,
      },
      giveBackTimeoutMs,
      backoffCapMs: PREFIX_ACQUIRE_BACKOFF_CAP_MS,
    });
  };
}

/** One tenant's pool and how much work it has in this invocation (the runner's tenant object fits). */
export interface TenantPermitRequest {
  readonly tenant: string;
  readonly pool: ConcurrencyTarget & { readonly concurrency: number };
  readonly writes: number;
}

export interface PermitWindow {
  /** Epoch ms: give up acquiring (the writes are redelivered) after this. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** Lease length: the invocation's remaining time plus a margin (no heartbeats). */
  readonly leaseMs: number;
}

/** What happened to a tenant's permits: it ran with `permits` (0: no semaphore), or none could be had. */
export type PermitResult = { readonly permits: number } | { readonly unavailable: unknown };

/** A lease whose release failed: it expires by itself; nothing about the writes made under it changes. */
export interface ReleaseFailure {
  readonly semaphore: string;
  readonly error: unknown;
}

/** What `TenantPermits.run` did, per tenant object it was given. */
export interface PermitReport<T> {
  readonly results: Map<T, PermitResult>;
  readonly releaseFailures: readonly ReleaseFailure[];
}

/**
 * Builds the semaphore of one name: `limit` is the static sizing (`S3_PREFIX_WRITE_RATE` x 20 ms),
 * `ratePerSecond` the rate it stands for (what an adaptive semaphore sizes by, with measured latency). Called again for a name whose semaphore the cache evicted, so the
 * permits must live outside the instance (DynamoDB), or the factory must return the same in-process
 * semaphore per name (as the tests' memoizing factories do).
 */
export type SemaphoreFactory = (name: string, limit: number, ratePerSecond?: number) => Semaphore;

/** The pool events a lease's usage is counted from (`ExecutorPool` fits). */
export interface UsageEvents {
  on(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  on(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
  off(event: 'pool:taskCompleted', listener: (e: PoolEvents['pool:taskCompleted']) => void): void;
  off(event: 'pool:taskError', listener: (e: PoolEvents['pool:taskError']) => void): void;
}

/**
 * Counts the S3 attempts of some pools while a lease is held, for `lease.report` (what an adaptive
 * semaphore moves its limit by). Pools without events count nothing.
 */
class UsageCounter {
  #succeeded = 0;
  #throttled = 0;
  #attemptMs = 0;
  readonly #stop: (() => void)[] = [];

  constructor(pools: readonly unknown[]) {
    const completed = (e: PoolEvents['pool:taskCompleted']) => {
      this.#succeeded++;
      this.#attemptMs += e.durationMs;
    };
    const failed = (e: PoolEvents['pool:taskError']) => {
      if (!isThrottling(e.error)) return;
      this.#throttled++;
      this.#attemptMs += e.durationMs;
    };
    for (const pool of pools) {
      if (!isUsageEvents(pool)) continue;
      pool.on('pool:taskCompleted', completed);
      pool.on('pool:taskError', failed);
      this.#stop.push(() => {
        pool.off('pool:taskCompleted', completed);
        pool.off('pool:taskError', failed);
      });
    }
  }

  stop(): LeaseUsage {
    for (const off of this.#stop.splice(0)) off();
    return { succeeded: this.#succeeded, throttled: this.#throttled, attemptMs: this.#attemptMs };
  }
}

function isUsageEvents(pool: unknown): pool is UsageEvents {
  const p = pool as Partial<UsageEvents> | null;
  return typeof p?.on === 'function' && typeof p.off === 'function';
}

/**
 * The small tenants of a batch under one lease, however few permits it has: at most `permits` tenants run
 * at a time, each pool at an equal share (at least 1), the next tenant starting when one has drained. So
 * the whole batch's small tenants cost one acquire and one release, and never have more writes in flight
 * than the lease granted.
 */
class PoolGroup<T extends TenantPermitRequest> implements ConcurrencyTarget {
  #permits = 1;

  constructor(readonly pools: readonly T[]) {}

  setConcurrency(n: number): void {
    this.#permits = Math.max(1, n);
  }

  async run(work: (tenant: T) => Promise<void>): Promise<void> {
    const running = Math.min(this.#permits, this.pools.length);
    const share = Math.max(1, Math.floor(this.#permits / running));
    let next = 0;
    const lane = async () => {
      while (next < this.pools.length) {
        const tenant = this.pools[next++]!;
        tenant.pool.setConcurrency(Math.max(1, Math.min(share, tenant.writes)));
        await work(tenant);
        // Its slot is free only once its writes (timed-out ones included) have settled.
        await tenant.pool.drain?.();
      }
    };
    await Promise.all(Array.from({ length: running }, lane));
  }

  async drain(): Promise<void> {
    await Promise.all(this.pools.map(({ pool }) => pool.drain?.()));
  }
}

/**
 * Acquires distributed-semaphore permits for the tenant prefixes one invocation writes to (once per
 * invocation per prefix, never per S3 call), sizes each tenant's pool to its grant, and releases on every
 * exit path. Without a semaphore table, pools run at `POOL_CONCURRENCY` bounded only by the invocation.
 */
export class TenantPermits {
  /**
   * The semaphores of recently seen prefixes (plus the shared small-tenant one), least recently used out,
   * sized like the tenant Database cache: a container seeing ever new tenants keeps a bounded set. An
   * evicted semaphore still in use keeps working for its holder (the permits live in the table).
   */
  readonly #semaphores: LRUCache<string, Semaphore>;
  readonly #factory: SemaphoreFactory | undefined;
  readonly #prefixLimit: number;
  readonly #releaseTimeoutMs: number;
  readonly #random: () => number;

  /**
   * `factory`: the distributed semaphores; without one, pools run bounded only by the invocation.
   * `random`: picks the small tenants' stripe (uniform in [0, 1)).
   */
  constructor(
    private readonly config: IngestConfig,
    factory: SemaphoreFactory | undefined,
    random: () => number = Math.random,
  ) {
    this.#random = random;
    this.#prefixLimit = permitsFor({
      ratePerSecond: config.s3PrefixWriteRate,
      latencyMs: ASSUMED_WRITE_LATENCY_MS,
    });
    this.#factory = factory;
    this.#semaphores = new LRUCache<string, Semaphore>({ max: config.tenantCacheSize + 1 });
    this.#releaseTimeoutMs = releaseTimeoutMs(config);
  }

  /** Semaphores cached now: at most `TENANT_CACHE_SIZE + 1`. */
  get cachedSemaphores(): number {
    return this.#semaphores.size;
  }

  /** Permits one prefix may have in flight fleet-wide. */
  get prefixLimit(): number {
    return this.#prefixLimit;
  }

  /**
   * Runs `work(tenant)` for every tenant under its permits, handing `work` the tenant object it was given.
   * A tenant whose permits could not be had by `window.deadline` does not run. A lease is released once its
   * tenants' work has drained; a release that fails is reported, never turned into "could not acquire":
   * the work already ran and its outcomes stand, and the lease expires by itself.
   */
  async run<T extends TenantPermitRequest>(
    tenants: readonly T[],
    window: PermitWindow,
    work: (tenant: T) => Promise<void>,
  ): Promise<PermitReport<T>> {
    const results = new Map<T, PermitResult>();
    const releaseFailures: ReleaseFailure[] = [];
    const factory = this.#factory;
    if (factory === undefined) {
      await Promise.all(
        tenants.map(async (t) => {
          t.pool.setConcurrency(Math.max(1, Math.min(this.config.poolConcurrency, t.writes)));
          await work(t);
          results.set(t, { permits: 0 });
        }),
      );
      return { results, releaseFailures };
    }

    const runUnder = (
      semaphore: Semaphore,
      target: ConcurrencyTarget,
      want: number,
      group: readonly T[],
      body: () => Promise<void>,
    ): Promise<void> =>
      this.#runUnder(semaphore, target, want, window, releaseFailures, body).then((result) => {
        for (const t of group) results.set(t, result);
      });

    // A tenant that had its own prefix lease recently (its semaphore is still cached) keeps it when a batch
    // brings it few writes: a hot prefix whose records come back spread over many redelivered batches would
    // otherwise escape its prefix's limit through the small tenants' stripes.
    const isLarge = (t: T) =>
      t.writes >= SMALL_TENANT_WRITES || this.#semaphores.has(this.#prefixName(t.tenant));
    const large = tenants.filter(isLarge);
    const small = tenants.filter((t) => !isLarge(t));
    const rate = this.config.s3PrefixWriteRate;
    const jobs: Promise<void>[] = [];
    for (const t of large) {
      const semaphore = this.#semaphoreOrUnavailable(
        factory,
        this.#prefixName(t.tenant),
        this.#prefixLimit,
        rate,
        [t],
        results,
      );
      if (semaphore === undefined) continue;
      // Up to the semaphore's own limit (an adaptive one may grant more than the 20 ms sizing).
      const want = Math.min(semaphore.limit, this.config.poolConcurrency, t.writes);
      jobs.push(runUnder(semaphore, t.pool, want, [t], () => work(t)));
    }

    const sharedLimit = this.#prefixLimit * SMALL_TENANTS_PREFIX_SHARE;
    const stripe = Math.min(SMALL_TENANT_STRIPES - 1, Math.floor(this.#random() * SMALL_TENANT_STRIPES));
    const sharedName = `bucket:${this.config.bucketName}/small-tenants#${stripe}`;
    const shared =
      small.length === 0
        ? undefined
        : this.#semaphoreOrUnavailable(
            factory,
            sharedName,
            sharedLimit,
            rate * SMALL_TENANTS_PREFIX_SHARE,
            small,
            results,
          );
    if (shared !== undefined) {
      // One lease for all of them, whatever it grants (min 1): the group runs within it (`PoolGroup`).
      const group = new PoolGroup(small);
      const want = Math.min(
        shared.limit,
        this.config.poolConcurrency,
        small.reduce((sum, t) => sum + t.writes, 0),
      );
      jobs.push(runUnder(shared, group, want, small, () => group.run(work)));
    }
    await Promise.all(jobs);
    return { results, releaseFailures };
  }

  #prefixName(tenant: string): string {
    return `prefix:${this.config.bucketName}/t=${tenant}/`;
  }

  /**
   * The semaphore for `name`, or `undefined` with `group` marked unavailable when the factory throws: a
   * semaphore that cannot even be built is one more way of "permits could not be had", for these tenants
   * only (their writes are redelivered; the other tenants go on).
   */
  #semaphoreOrUnavailable<T>(
    factory: SemaphoreFactory,
    name: string,
    limit: number,
    ratePerSecond: number,
    group: readonly T[],
    results: Map<T, PermitResult>,
  ): Semaphore | undefined {
    try {
      return this.#semaphore(factory, name, limit, ratePerSecond);
    } catch (unavailable) {
      for (const t of group) results.set(t, { unavailable });
      return undefined;
    }
  }

  #semaphore(factory: SemaphoreFactory, name: string, limit: number, ratePerSecond: number): Semaphore {
    let semaphore = this.#semaphores.get(name);
    if (semaphore === undefined) {
      semaphore = factory(name, limit, ratePerSecond);
      this.#semaphores.set(name, semaphore);
    }
    return semaphore;
  }

  /**
   * Acquire, size the target, run, drain, release: `withPermits`' steps, with each failure kept apart. A
   * failed acquire is `unavailable` (the work never ran); a failed release is reported to
   * `releaseFailures` and changes nothing else.
   */
  async #runUnder(
    semaphore: Semaphore,
    target: ConcurrencyTarget,
    want: number,
    window: PermitWindow,
    releaseFailures: ReleaseFailure[],
    body: () => Promise<void>,
  ): Promise<PermitResult> {
    const capped = Math.min(want, semaphore.limit);
    let lease: Lease;
    try {
      lease = await semaphore.acquire(capped, {
        // Any permit lets the work progress (a group runs its tenants in turn within the grant).
        min: 1,
        deadline: window.deadline,
        signal: window.signal,
        leaseMs: window.leaseMs,
      });
    } catch (err) {
      // Out of time, aborted, or DynamoDB unreachable: only these tenants' writes are redelivered.
      return {
        unavailable: window.signal.aborted
          ? new SemaphoreTimeoutError(semaphore.name, 1, window.deadline)
          : err,
      };
    }
    const usage = new UsageCounter(target instanceof PoolGroup ? target.pools.map((t) => t.pool) : [target]);
    // An adaptive lease (one that takes a report) also steers its pool between acquire and release.
    const governor =
      lease.report !== undefined && !(target instanceof PoolGroup) && isUsageEvents(target)
        ? new GrantGovernor(target, target, lease.permits)
        : undefined;
    try {
      target.setConcurrency(lease.permits);
      await body();
      // No write outlives its permit: in-flight (and timed-out, still settling) work ends first.
      await target.drain?.();
    } finally {
      governor?.stop();
      // What S3 answered under the lease rides on the release (an adaptive semaphore's limit moves with it).
      lease.report?.(usage.stop());
      try {
        // Released after the cutoff too (the lease is handed back for others), but bounded by a quarter of
        // the margin the cutoff leaves: a stalled semaphore cannot hold the invocation; the lease expires.
        await lease.release({ signal: AbortSignal.timeout(this.#releaseTimeoutMs) });
      } catch (error) {
        releaseFailures.push({ semaphore: semaphore.name, error });
      }
    }
    return { permits: lease.permits };
  }
}
