import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { LRUCache } from 'lru-cache';
import { tenantPrefix } from '../../../db/keys.js';
import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import { AdaptiveDynamoSemaphore } from '../../../semaphore/adaptive-dynamo-semaphore.js';
import { DynamoSemaphore } from '../../../semaphore/dynamo-semaphore.js';
import { SemaphoreTimeoutError } from '../../../semaphore/errors.js';
import { permitsFor } from '../../../semaphore/permits-for.js';
import type { RateBudget } from '../../../semaphore/rate-types.js';
import type { Lease, LeaseUsage, Semaphore } from '../../../semaphore/types.js';
import type { ConcurrencyTarget } from '../../../semaphore/with-permits.js';
import type { IngestConfig } from '../../config.js';
import { acquireForTurn, LATE_HOLDER_GRACE_MS } from './acquire-turn.js';
import { drainBy } from './drain-by.js';
import { GRANT_DECREASE_FACTOR, GrantGovernor } from './grant-governor.js';
import { LeaseResize } from './lease-resize.js';
import type { PrefixWriteCounts, WriteWatch } from './prefix-write-counts.js';
import { type RateBudgetFactory, type RateHolderPool, runUnderRate } from './rate-holder.js';

/** The S3 write latency the permits are sized for (Little's law: 3,500 PUT/s x 20 ms = 70 in flight). */
export const ASSUMED_WRITE_LATENCY_MS = 20;
/**
 * The slot time per write a prefix's adaptive limit assumes until a lease has measured one: a GET and a
 * conditional PUT, above what S3 usually takes and closer to a cold fleet's first seconds. Assuming more
 * than the truth is safe (a holder spaces its writes at its grant's rate, `GrantGovernor`); assuming less
 * caps the first lease below its rate until its resize. Why 100: docs/decisions/first-lease-latency.md.
 */
export const FIRST_LEASE_LATENCY_MS = 100;
/**
 * Permits per request in flight that Little's law gives, for a prefix's adaptive limit
 * (`AdaptiveLimitOptions.inFlightSlack`). The holder's pool spaces its starts at the grant's rate, so the
 * slack only keeps answers slower than the average from holding it under that rate
 * (docs/decisions/first-lease-latency.md).
 */
export const IN_FLIGHT_SLACK = 1.5;
/**
 * Tenants with fewer writes than this in a batch write without a lease: a prefix that receives a handful of
 * writes from one invocation is in no danger of SlowDown, and a lease would cost two DynamoDB writes for a
 * few S3 writes (docs/decisions/small-tenants-without-lease.md). A tenant that S3 throttles anyway (small
 * in each batch but in every batch of a large fleet) is promoted: its prefix semaphore enters the
 * container's cache, and while it stays there the tenant takes its prefix lease whatever its batch brings.
 */
export const SMALL_TENANT_WRITES = 10;
/**
 * Share of `POOL_CONCURRENCY` the small tenants of one invocation may have in flight together (at least 1).
 * They hold no lease, so nothing else bounds them but the invocation's budget; unbounded, a batch of a
 * hundred tiny tenants slows the container's leased tenants (docs/decisions/small-tenants-without-lease.md).
 */
export const SMALL_TENANTS_SHARE_OF_POOL = 1 / 4;

/**
 * Longest wait between two acquire rounds on a tenant prefix's semaphore. A hot prefix whose limit is a
 * permit or less is held by one invocation at a time, and the next holder learns that it is free only by
 * reading again, so the cap is the longest hand-over gap; the semaphore's default 500 ms leaves a hot prefix
 * idle too long (docs/decisions/prefix-hand-over.md). Each round is one strongly consistent read (1 RCU),
 * not a write.
 */
export const PREFIX_ACQUIRE_BACKOFF_CAP_MS = 100;

/**
 * A tenant stops waiting for its prefix's permits this long before the cutoff (a quarter of the time it
 * has, when that is less): a lease had with less time left than this holds the whole prefix, fleet-wide,
 * for a handful of writes or none, and leaves it idle while its holder aborts, releases and the next waiter
 * wakes up (docs/decisions/prefix-hand-over.md).
 */
export const LEAST_USEFUL_LEASE_MS = 500;

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
 * whose hard cap is the rate x 1 s (it starts at `FIRST_LEASE_LATENCY_MS` x `IN_FLIGHT_SLACK` per write and
 * follows measured latency and SlowDowns below that); any other name gets a static one (`DynamoSemaphore`).
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
        initialLatencyMs: FIRST_LEASE_LATENCY_MS,
        decreaseFactor: GRANT_DECREASE_FACTOR,
        inFlightSlack: IN_FLIGHT_SLACK,
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
  /**
   * The most times SQS delivered any of its records: a tenant whose records are closer to the DLQ polls
   * for its prefix's permits more often (`PREFIX_ACQUIRE_BACKOFF_CAP_MS / receives`). @default 1
   */
  readonly receives?: number;
  /**
   * The longest it waits for its prefix's permits (a tenant whose records can be deferred: its invocation's
   * slot is worth more than its turn). @default until `LEAST_USEFUL_LEASE_MS` before the window's deadline
   */
  readonly maxWaitMs?: number | undefined;
}

export interface PermitWindow {
  /** Epoch ms: give up acquiring (the writes are redelivered) after this. */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** Lease length: the invocation's remaining time plus a margin (no heartbeats). */
  readonly leaseMs: number;
}

/**
 * What happened to a tenant's permits: it ran with `permits` (0: no semaphore), or none could be had;
 * `outOfTurn` when the semaphore itself gave up before the cutoff (others held the permits), not a failing
 * or stalled semaphore.
 */
export type PermitResult =
  | { readonly permits: number }
  | { readonly unavailable: unknown; readonly outOfTurn?: true };

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

  /** `writes`: the lease's prefix's write requests, when the store counts them (`LeaseUsage.writes`). */
  constructor(
    pools: readonly unknown[],
    private readonly writes?: WriteWatch,
  ) {
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

  /** The usage so far, still counting. */
  snapshot(): LeaseUsage {
    const usage = { succeeded: this.#succeeded, throttled: this.#throttled, attemptMs: this.#attemptMs };
    return this.writes === undefined ? usage : { ...usage, writes: this.writes.count };
  }

  stop(): LeaseUsage {
    for (const off of this.#stop.splice(0)) off();
    this.writes?.stop();
    return this.snapshot();
  }
}

/** Builds the cap of one prefix name (a rate budget or a semaphore). */
type CapBuilder = (name: string) => Semaphore | RateBudget;

function isRateHolderPool(pool: unknown): pool is RateHolderPool {
  return isUsageEvents(pool) && typeof (pool as Partial<RateHolderPool>).setStartInterval === 'function';
}

function isRateBudget(cap: Semaphore | RateBudget): cap is RateBudget {
  return typeof (cap as Partial<RateBudget>).book === 'function';
}

function isUsageEvents(pool: unknown): pool is UsageEvents {
  const p = pool as Partial<UsageEvents> | null;
  return typeof p?.on === 'function' && typeof p.off === 'function';
}

/**
 * Acquires distributed-semaphore permits for the tenant prefixes one invocation writes to (once per
 * invocation per prefix, never per S3 call), sizes each tenant's pool to its grant, and releases on every
 * exit path. Without a semaphore table, pools run at `POOL_CONCURRENCY` bounded only by the invocation.
 */
export class TenantPermits {
  /**
   * The semaphores of recently seen prefixes (leased or promoted by a SlowDown), least recently used out,
   * sized like the tenant Database cache: a container seeing ever new tenants keeps a bounded set. An
   * evicted semaphore still in use keeps working for its holder (the permits live in the table).
   */
  readonly #semaphores: LRUCache<string, Semaphore | RateBudget>;
  readonly #factory: SemaphoreFactory | undefined;
  readonly #prefixLimit: number;
  readonly #releaseTimeoutMs: number;

  /**
   * `factory`: the distributed semaphores; without one, pools run bounded only by the invocation.
   * `writeCounts`: the container store's writes per tenant prefix; with it a lease's report tells its
   * writes apart from its reads (the prefix limit is a write rate), else every attempt counts as a write.
   */
  constructor(
    private readonly config: IngestConfig,
    factory: SemaphoreFactory | undefined,
    private readonly writeCounts?: PrefixWriteCounts,
    /** The prefixes' rate budgets (docs/fleet-cap.md): with them, large tenants hold a rate, not permits. */
    private readonly budgets?: RateBudgetFactory,
  ) {
    this.#prefixLimit = permitsFor({
      ratePerSecond: config.s3PrefixWriteRate,
      latencyMs: ASSUMED_WRITE_LATENCY_MS,
    });
    this.#factory = factory;
    this.#semaphores = new LRUCache<string, Semaphore | RateBudget>({ max: config.tenantCacheSize });
    this.#releaseTimeoutMs = releaseTimeoutMs(config);
  }

  /** Semaphores cached now: at most `TENANT_CACHE_SIZE`. */
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
    const factory = this.#capBuilder();
    // A tenant that had its own prefix lease recently, or that S3 throttled while it wrote without one (its
    // semaphore is cached either way), takes its prefix lease whatever its batch brings: a hot prefix whose
    // records come back spread over many redelivered batches would otherwise escape its prefix's limit.
    const isLarge = (t: T) =>
      t.writes >= SMALL_TENANT_WRITES || this.#semaphores.has(this.#prefixName(t.tenant));
    if (factory === undefined) {
      await Promise.all(
        tenants.map(async (t) => results.set(t, await this.#runWithoutLease(undefined, t, work))),
      );
      return { results, releaseFailures };
    }
    const small = tenants.filter((t) => !isLarge(t));
    const large = tenants.filter(isLarge);
    await Promise.all([
      ...large.map(async (t) =>
        results.set(t, await this.#runUnderPrefixLease(factory, t, window, releaseFailures, work)),
      ),
      this.#runSmallTenants(factory, small, results, window, work),
    ]);
    return { results, releaseFailures };
  }

  /**
   * The small tenants, `SMALL_TENANTS_SHARE_OF_POOL` of `POOL_CONCURRENCY` in flight together: at most
   * that many tenants at a time, each pool at an equal share of it (at least 1, at most its writes), the
   * next tenant starting once one has drained.
   */
  async #runSmallTenants<T extends TenantPermitRequest>(
    factory: CapBuilder,
    small: readonly T[],
    results: Map<T, PermitResult>,
    window: PermitWindow,
    work: (tenant: T) => Promise<void>,
  ): Promise<void> {
    const cap = Math.max(1, Math.floor(this.config.poolConcurrency * SMALL_TENANTS_SHARE_OF_POOL));
    const lanes = Math.min(cap, small.length);
    const share = Math.max(1, Math.floor(cap / Math.max(1, lanes)));
    let next = 0;
    const lane = async () => {
      while (next < small.length) {
        const tenant = small[next++]!;
        results.set(tenant, await this.#runWithoutLease(factory, tenant, work, share));
        // Its lane is free only once its writes (timed-out ones included) have settled.
        await drainBy(tenant.pool, window.signal, this.#releaseTimeoutMs);
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
  }

  /**
   * A small tenant's writes, with no lease (no DynamoDB write): its pool at its writes, bounded by the
   * container's budget. If S3 answers SlowDown meanwhile, the tenant's prefix semaphore is built and cached,
   * which promotes the tenant to its own lease from its next batch on (`isLarge`). A factory that throws
   * leaves the tenant small (the write itself never depended on it).
   */
  async #runWithoutLease<T extends TenantPermitRequest>(
    factory: CapBuilder | undefined,
    tenant: T,
    work: (tenant: T) => Promise<void>,
    share = this.config.poolConcurrency,
  ): Promise<PermitResult> {
    tenant.pool.setConcurrency(Math.max(1, Math.min(share, tenant.writes)));
    // Watched only where a promotion can follow (a semaphore factory): SlowDowns are all it looks for.
    const usage = factory === undefined ? undefined : new UsageCounter([tenant.pool]);
    try {
      await work(tenant);
    } finally {
      if (factory !== undefined && usage !== undefined && usage.stop().throttled > 0) {
        try {
          this.#cap(factory, this.#prefixName(tenant.tenant));
        } catch {
          // Promotion is an optimisation: without it the tenant stays small until a factory works.
        }
      }
    }
    return { permits: 0 };
  }

  /** A large tenant's writes under its prefix's lease; `unavailable` when the semaphore cannot be built. */
  async #runUnderPrefixLease<T extends TenantPermitRequest>(
    factory: CapBuilder,
    tenant: T,
    window: PermitWindow,
    releaseFailures: ReleaseFailure[],
    work: (tenant: T) => Promise<void>,
  ): Promise<PermitResult> {
    let semaphore: Semaphore | RateBudget;
    try {
      semaphore = this.#cap(factory, this.#prefixName(tenant.tenant));
    } catch (unavailable) {
      // A semaphore that cannot even be built is one more way of "permits could not be had", for this
      // tenant only (its writes are redelivered; the other tenants go on).
      return { unavailable };
    }
    if (isRateBudget(semaphore)) return this.#runUnderRate(semaphore, tenant, window, releaseFailures, work);
    // Up to the semaphore's own limit (an adaptive one may grant more than the 20 ms sizing).
    const want = Math.min(semaphore.limit, this.config.poolConcurrency, tenant.writes);
    // Records closer to the DLQ poll more often, so they tend to be the next to get a hot prefix's turn: a
    // turn lost at every receive is a record dead-lettered though S3 never refused it.
    const backoffCapMs = PREFIX_ACQUIRE_BACKOFF_CAP_MS / Math.max(1, tenant.receives ?? 1);
    return this.#runUnder(
      semaphore,
      tenant.pool,
      want,
      window,
      releaseFailures,
      {
        backoffCapMs,
        writesPrefix: tenantPrefix(tenant.tenant),
        requests: tenant.writes,
        maxWaitMs: tenant.maxWaitMs,
      },
      () => work(tenant),
    );
  }

  #prefixName(tenant: string): string {
    return `prefix:${this.config.bucketName}/t=${tenant}/`;
  }

  /** What builds a prefix's cap: its rate budget, else its semaphore, else none (no table). */
  #capBuilder(): CapBuilder | undefined {
    const { budgets } = this;
    const factory = this.#factory;
    const rate = this.config.s3PrefixWriteRate;
    if (budgets !== undefined) return (name) => budgets(name, rate);
    if (factory !== undefined) return (name) => factory(name, this.#prefixLimit, rate);
    return undefined;
  }

  #cap(build: CapBuilder, name: string): Semaphore | RateBudget {
    let cap = this.#semaphores.get(name);
    if (cap === undefined) {
      cap = build(name);
      this.#semaphores.set(name, cap);
    }
    return cap;
  }

  /** A large tenant's writes under a share of its prefix's rate budget (docs/fleet-cap.md). */
  async #runUnderRate<T extends TenantPermitRequest>(
    budget: RateBudget,
    tenant: T,
    window: PermitWindow,
    releaseFailures: ReleaseFailure[],
    work: (tenant: T) => Promise<void>,
  ): Promise<PermitResult> {
    const pool: unknown = tenant.pool;
    if (!isRateHolderPool(pool))
      return {
        unavailable: new TypeError('a rate budget paces an ExecutorPool: the pool lacks setStartInterval'),
      };
    const result = await runUnderRate(
      budget,
      {
        pool,
        writes: tenant.writes,
        inFlight: Math.min(this.config.poolConcurrency, tenant.writes),
        maxWaitMs: tenant.maxWaitMs,
      },
      { ...window, releaseTimeoutMs: this.#releaseTimeoutMs },
      this.writeCounts?.watch(tenantPrefix(tenant.tenant)),
      () => work(tenant),
    );
    if ('unavailable' in result) return result;
    if ('releaseError' in result)
      releaseFailures.push({ semaphore: budget.name, error: result.releaseError });
    return { permits: result.rate };
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
    {
      backoffCapMs,
      writesPrefix,
      requests,
      maxWaitMs,
    }: { backoffCapMs: number; writesPrefix: string; requests: number; maxWaitMs: number | undefined },
    body: () => Promise<void>,
  ): Promise<PermitResult> {
    const capped = Math.min(want, semaphore.limit);
    const now = Date.now();
    const latest = window.deadline - Math.min(LEAST_USEFUL_LEASE_MS, Math.max(0, window.deadline - now) / 4);
    const deadline = Math.min(now + (maxWaitMs ?? Number.POSITIVE_INFINITY), latest);
    let lease: Lease;
    try {
      const options = {
        // Any permit lets the work progress (a group runs its tenants in turn within the grant).
        min: 1,
        deadline,
        signal: window.signal,
        leaseMs: window.leaseMs,
        backoffCapMs,
        // The holder says when it expects to be done (its writes at its grant's rate): waiters sleep until
        // then, and one that could not get its turn before its deadline gives up at once, so its invocation
        // hands its records back instead of holding a slot of the queue's concurrency until the deadline.
        requests,
      };
      // A tenant with a turn wait stays a little longer for holders running late (the hand-over's waiter).
      lease =
        maxWaitMs === undefined
          ? await semaphore.acquire(capped, options)
          : await acquireForTurn(semaphore, capped, options, LATE_HOLDER_GRACE_MS, latest);
    } catch (err) {
      // Out of time, aborted, or DynamoDB unreachable: only these tenants' writes are redelivered.
      if (window.signal.aborted)
        return { unavailable: new SemaphoreTimeoutError(semaphore.name, 1, deadline) };
      return err instanceof SemaphoreTimeoutError
        ? { unavailable: err, outOfTurn: true }
        : { unavailable: err };
    }
    const writes = lease.report === undefined ? undefined : this.writeCounts?.watch(writesPrefix);
    const usage = new UsageCounter([target], writes);
    // An adaptive lease (one that takes a report) also steers its pool between acquire and release.
    const governor =
      lease.report !== undefined && isUsageEvents(target)
        ? new GrantGovernor(target, target, lease.permits, {
            ...(lease.latencyMs === undefined ? {} : { latencyMs: lease.latencyMs }),
            ...(writes === undefined ? {} : { writes: () => writes.count }),
          })
        : undefined;
    // A lease sized with a latency far below what its writes take (a new prefix's assumed one) grows once.
    const resize =
      governor !== undefined && isUsageEvents(target)
        ? new LeaseResize(lease, {
            usage: () => usage.snapshot(),
            events: target,
            resized: (permits, latencyMs) => governor.regrant(permits, latencyMs),
            bound: () => AbortSignal.any([window.signal, AbortSignal.timeout(this.#releaseTimeoutMs)]),
          })
        : undefined;
    try {
      target.setConcurrency(lease.permits);
      await body();
      // No write outlives its permit: in-flight (and timed-out, still settling) work ends first.
      await drainBy(target, window.signal, this.#releaseTimeoutMs);
    } finally {
      // The release comes after a resize in flight (it gives back what the shard then holds).
      await resize?.stop();
      governor?.stop();
      // What S3 answered under the lease rides on the release (an adaptive semaphore's limit moves with it),
      // with where the governor's SlowDown cuts left the pool.
      const seen = usage.stop();
      lease.report?.(governor === undefined ? seen : { ...seen, keptShare: governor.keptShare });
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
