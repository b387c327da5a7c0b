import { LRUCache } from 'lru-cache';
import { SemaphoreTimeoutError } from '../../semaphore/errors.js';
import { permitsFor } from '../../semaphore/permits-for.js';
import type { Lease, Semaphore } from '../../semaphore/types.js';
import type { ConcurrencyTarget } from '../../semaphore/with-permits.js';
import type { IngestConfig } from '../config.js';

/** The S3 write latency the permits are sized for (Little's law: 3,500 PUT/s x 20 ms = 70 in flight). */
export const ASSUMED_WRITE_LATENCY_MS = 20;
/**
 * Tenants with fewer writes than this in a batch share one bucket-level lease instead of each paying two
 * DynamoDB writes for their own: a prefix that receives a handful of writes is in no danger of SlowDown,
 * and per-tenant leases would cost as many DynamoDB writes as S3 writes.
 */
export const SMALL_TENANT_WRITES = 10;
/** The shared lease of small tenants caps their fleet-wide in-flight writes at this many prefixes' worth. */
export const SMALL_TENANTS_PREFIX_SHARE = 4;

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
 * Builds the semaphore of one name. Called again for a name whose semaphore the cache evicted, so the
 * permits must live outside the instance (DynamoDB), or the factory must return the same in-process
 * semaphore per name (as the tests' memoizing factories do).
 */
export type SemaphoreFactory = (name: string, limit: number) => Semaphore;

/** Several small tenants' pools sized as one: each gets an equal share (at least 1) of the permits. */
class PoolGroup implements ConcurrencyTarget {
  constructor(private readonly pools: readonly TenantPermitRequest[]) {}

  setConcurrency(n: number): void {
    const share = Math.max(1, Math.floor(n / this.pools.length));
    for (const { pool, writes } of this.pools) pool.setConcurrency(Math.max(1, Math.min(share, writes)));
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

  /** `factory`: the distributed semaphores; without one, pools run bounded only by the invocation. */
  constructor(
    private readonly config: IngestConfig,
    factory: SemaphoreFactory | undefined,
  ) {
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
    ): Promise<void> =>
      this.#runUnder(semaphore, target, want, group.length, window, releaseFailures, async () => {
        await Promise.all(group.map((t) => work(t)));
      }).then((result) => {
        for (const t of group) results.set(t, result);
      });

    const large = tenants.filter((t) => t.writes >= SMALL_TENANT_WRITES);
    const small = tenants.filter((t) => t.writes < SMALL_TENANT_WRITES);
    const jobs: Promise<void>[] = [];
    for (const t of large) {
      const semaphore = this.#semaphoreOrUnavailable(
        factory,
        `prefix:${this.config.bucketName}/t=${t.tenant}/`,
        this.#prefixLimit,
        [t],
        results,
      );
      if (semaphore === undefined) continue;
      jobs.push(
        runUnder(semaphore, t.pool, Math.min(this.#prefixLimit, this.config.poolConcurrency, t.writes), [t]),
      );
    }

    const sharedLimit = this.#prefixLimit * SMALL_TENANTS_PREFIX_SHARE;
    const sharedName = `bucket:${this.config.bucketName}/small-tenants`;
    // Each small tenant needs at least one permit of the shared lease, so a group never outnumbers what the
    // semaphore can grant. Sized from the semaphore's actual limit: a factory may build it smaller than asked
    // (a table configured with fewer permits), and a group larger than the grant would run one write per
    // tenant over it.
    const shared =
      small.length === 0
        ? undefined
        : this.#semaphoreOrUnavailable(factory, sharedName, sharedLimit, small, results);
    const groupSize = Math.max(1, Math.floor((shared?.limit ?? sharedLimit) / 2));
    for (let i = 0; shared !== undefined && i < small.length; i += groupSize) {
      const group = small.slice(i, i + groupSize);
      const want = Math.min(
        sharedLimit,
        this.config.poolConcurrency,
        group.reduce((sum, t) => sum + t.writes, 0),
      );
      jobs.push(runUnder(shared, new PoolGroup(group), Math.max(want, group.length), group));
    }
    await Promise.all(jobs);
    return { results, releaseFailures };
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
    group: readonly T[],
    results: Map<T, PermitResult>,
  ): Semaphore | undefined {
    try {
      return this.#semaphore(factory, name, limit);
    } catch (unavailable) {
      for (const t of group) results.set(t, { unavailable });
      return undefined;
    }
  }

  #semaphore(factory: SemaphoreFactory, name: string, limit: number): Semaphore {
    let semaphore = this.#semaphores.get(name);
    if (semaphore === undefined) {
      semaphore = factory(name, limit);
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
    min: number,
    window: PermitWindow,
    releaseFailures: ReleaseFailure[],
    body: () => Promise<void>,
  ): Promise<PermitResult> {
    const capped = Math.min(want, semaphore.limit);
    let lease: Lease;
    try {
      lease = await semaphore.acquire(capped, {
        min: Math.min(min, capped),
        deadline: window.deadline,
        signal: window.signal,
        leaseMs: window.leaseMs,
      });
    } catch (err) {
      // Out of time, aborted, or DynamoDB unreachable: only these tenants' writes are redelivered.
      return {
        unavailable: window.signal.aborted
          ? new SemaphoreTimeoutError(semaphore.name, min, window.deadline)
          : err,
      };
    }
    try {
      target.setConcurrency(lease.permits);
      await body();
      // No write outlives its permit: in-flight (and timed-out, still settling) work ends first.
      await target.drain?.();
    } finally {
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
