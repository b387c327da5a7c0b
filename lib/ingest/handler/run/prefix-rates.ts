import { LRUCache } from 'lru-cache';
import { tenantPrefix } from '../../../db/keys.js';
import { isThrottling } from '../../../errors/classify.js';
import type { PoolEvents } from '../../../pool/events.js';
import type { RateBudget } from '../../../semaphore/rate-types.js';
import { TwoChoiceRateBudget } from '../../../semaphore/two-choice-budget.js';
import type { IngestConfig } from '../../config.js';
import { drainBy } from './drain-by.js';
import type { PrefixWriteCounts } from './prefix-write-counts.js';
import { type RateBudgetFactory, type RateHolderPool, runUnderRate } from './rate-holder.js';
import { allSharded, stripeBudgetName, stripeCount } from './shard-stripes.js';

/** Tenants that write without booking slots (docs/decisions/small-tenants-without-lease.md). */
export const SMALL_TENANTS = {
  /**
   * Tenants with fewer writes than this in a batch write without booking: a prefix that receives a handful
   * of writes from one invocation is in no danger of SlowDown, and a booking would cost a DynamoDB write
   * for a few S3 writes. A tenant that S3 throttles anyway (small in each batch but in every batch of a
   * large fleet) is promoted: its prefix's budget enters the container's cache, and while it stays there
   * the tenant books whatever its batch brings.
   */
  writes: 10,
  /**
   * Share of `POOL_CONCURRENCY` the small tenants of one invocation may have in flight together (at least
   * 1). They book no slots, so nothing else bounds them but the invocation's budget; unbounded, a batch of
   * a hundred tiny tenants slows the container's booked tenants.
   */
  shareOfPool: 1 / 4,
} as const;

/**
 * How long a report to a prefix's budget may take after the work: a quarter of `DEADLINE_MARGIN_MS`. After
 * the cutoff the margin is spent as: reports (this), then dead letters (until half the margin,
 * `settleMs`), then the response, so the invocation answers before Lambda's timeout when DynamoDB or SQS
 * stalls.
 */
export function releaseTimeoutMs(config: IngestConfig): number {
  return Math.max(1, Math.floor(config.deadlineMarginMs / 4));
}

/** How long after the cutoff the dead letters may still be sent: half of `DEADLINE_MARGIN_MS`. */
export function settleMs(config: IngestConfig): number {
  return Math.max(1, Math.floor(config.deadlineMarginMs / 2));
}

/** One tenant's pool and how much work it has in this invocation (the runner's tenant object fits). */
export interface TenantRateRequest {
  readonly tenant: string;
  readonly pool: RateHolderPool;
  readonly writes: number;
  /**
   * The longest it waits for its first slot (a tenant whose records can be deferred: its invocation's time
   * is worth more than its turn). @default half the time left
   */
  readonly maxWaitMs?: number | undefined;
  /**
   * The resources its writes go to: when every one is sharded (`RESOURCE_SHARDS`), it books one stripe of
   * its tenant's sharded budget instead of its tenant prefix's (docs/fleet-cap.md, "Sharded resources").
   * @default undefined (its tenant prefix)
   */
  readonly resources?: readonly string[] | undefined;
}

/** The invocation's bounds on its tenants' writes. */
export interface RateRunWindow {
  /** Epoch ms: no write starts after it; writes without a slot by then are redelivered. */
  readonly deadline: number;
  readonly signal: AbortSignal;
}

/**
 * What happened to a tenant: it wrote paced at `rate` writes/s (0: it booked no slots, a small tenant or no
 * budgets), or could not have slots; `outOfTurn` when its prefix's schedule was booked past its latest start
 * (others had the slots), not a failing or stalled budget.
 */
export type RateResult =
  | { readonly rate: number }
  | { readonly unavailable: unknown; readonly outOfTurn?: true };

/** A report that failed: the budget's step is lost (the next report steps); no outcome changes. */
export interface ReportFailure {
  readonly prefix: string;
  readonly error: unknown;
}

/** What `PrefixRates.run` did, per tenant object it was given. */
export interface RateRunReport<T> {
  readonly results: Map<T, RateResult>;
  readonly reportFailures: readonly ReportFailure[];
}

/**
 * Runs each tenant's writes under its prefix's fleet-wide write rate (docs/fleet-cap.md): a tenant with
 * `SMALL_TENANTS.writes` or more books slots in its prefix's schedule and paces its pool in them
 * (`runUnderRate`); smaller tenants write without a booking, a few at a time. Without budgets (no semaphore
 * table), pools run at `POOL_CONCURRENCY` bounded only by the invocation.
 */
export class PrefixRates {
  /**
   * The budgets of recently seen prefixes and stripes (booked, or promoted by a SlowDown), least recently
   * used out, sized like the tenant Database cache (times the stripes): a container seeing ever new tenants
   * keeps a bounded set. An evicted budget still in use keeps working for its holder (the schedule lives in
   * the table).
   */
  readonly #budgets: LRUCache<string, RateBudget>;
  readonly #releaseTimeoutMs: number;
  /** Stripes of a sharded tenant's budget (0: no resource is sharded). */
  readonly #stripes: number;
  /**
   * Sharded tenants that booked a stripe or were promoted recently (`#promotionName`), least recently used
   * out: they book whatever their batch brings, as a tenant whose prefix budget is cached does. A booking
   * may land in any stripe, so the stripe budgets cached cannot tell.
   */
  readonly #stripedBookers: LRUCache<string, true>;

  /**
   * `factory`: the prefixes' rate budgets; without one, pools run bounded only by the invocation.
   * `writeCounts`: the container store's writes per tenant prefix; with it a holder's rounds tell its writes
   * apart from its reads (the limit is a write rate), else every attempt counts as a write.
   * `random`: uniform [0, 1), picks the stripe a sharded tenant's holder tries first.
   */
  constructor(
    private readonly config: IngestConfig,
    private readonly factory: RateBudgetFactory | undefined,
    private readonly writeCounts?: PrefixWriteCounts,
    private readonly random: () => number = Math.random,
  ) {
    this.#stripes = stripeCount(config);
    // A sharded tenant's holders use up to one budget per stripe.
    this.#budgets = new LRUCache<string, RateBudget>({
      max: config.tenantCacheSize * Math.max(1, this.#stripes),
    });
    this.#stripedBookers = new LRUCache<string, true>({ max: config.tenantCacheSize });
    this.#releaseTimeoutMs = releaseTimeoutMs(config);
  }

  /** Budgets cached now: at most `TENANT_CACHE_SIZE` (times the stripes of a sharded tenant's budget, when any). */
  get cachedBudgets(): number {
    return this.#budgets.size;
  }

  /**
   * Runs `work(tenant, signal)` for every tenant under its prefix's rate, handing `work` the tenant object it
   * was given and the signal its writes go under (the window's, or sooner its holder's giving up). A tenant that could not have slots does not run. A report that fails is listed, never turned into
   * "could not have slots": the work already ran and its outcomes stand.
   */
  async run<T extends TenantRateRequest>(
    tenants: readonly T[],
    window: RateRunWindow,
    work: (tenant: T, signal: AbortSignal) => Promise<void>,
  ): Promise<RateRunReport<T>> {
    const results = new Map<T, RateResult>();
    const reportFailures: ReportFailure[] = [];
    const { factory } = this;
    if (factory === undefined) {
      await Promise.all(
        tenants.map(async (t) => results.set(t, await this.#runUnbooked(undefined, t, window.signal, work))),
      );
      return { results, reportFailures };
    }
    // A tenant whose prefix booked recently, or that S3 throttled while it wrote unbooked (its budget is
    // cached either way), books whatever its batch brings: a hot prefix whose records come back spread over
    // many redelivered batches would otherwise escape its prefix's rate.
    const large = (t: T) =>
      t.writes >= SMALL_TENANTS.writes ||
      this.#budgets.has(this.#promotionName(t)) ||
      this.#stripedBookers.has(this.#promotionName(t));
    await Promise.all([
      ...tenants
        .filter(large)
        .map(async (t) => results.set(t, await this.#runBooked(factory, t, window, reportFailures, work))),
      this.#runSmallTenants(
        factory,
        tenants.filter((t) => !large(t)),
        results,
        window,
        work,
      ),
    ]);
    return { results, reportFailures };
  }

  /**
   * The small tenants, `SMALL_TENANTS.shareOfPool` of `POOL_CONCURRENCY` in flight together: at most
   * that many tenants at a time, each pool at an equal share of it (at least 1, at most its writes), the
   * next tenant starting once one has drained.
   */
  async #runSmallTenants<T extends TenantRateRequest>(
    factory: RateBudgetFactory,
    small: readonly T[],
    results: Map<T, RateResult>,
    window: RateRunWindow,
    work: (tenant: T, signal: AbortSignal) => Promise<void>,
  ): Promise<void> {
    const cap = Math.max(1, Math.floor(this.config.poolConcurrency * SMALL_TENANTS.shareOfPool));
    const lanes = Math.min(cap, small.length);
    const share = Math.max(1, Math.floor(cap / Math.max(1, lanes)));
    let next = 0;
    const lane = async () => {
      while (next < small.length) {
        const tenant = small[next++]!;
        results.set(tenant, await this.#runUnbooked(factory, tenant, window.signal, work, share));
        // Its lane is free only once its writes (timed-out ones included) have settled.
        await drainBy(tenant.pool, window.signal, this.#releaseTimeoutMs);
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
  }

  /**
   * A small tenant's writes with no booking (no DynamoDB call): its pool at its writes, bounded by the
   * container's budget. If S3 answers SlowDown meanwhile, the tenant's prefix budget is built and cached,
   * which promotes the tenant to booking from its next batch on. A factory that throws leaves the tenant
   * small (the write itself never depended on it).
   */
  async #runUnbooked<T extends TenantRateRequest>(
    factory: RateBudgetFactory | undefined,
    tenant: T,
    signal: AbortSignal,
    work: (tenant: T, signal: AbortSignal) => Promise<void>,
    share = this.config.poolConcurrency,
  ): Promise<RateResult> {
    tenant.pool.setConcurrency(Math.max(1, Math.min(share, tenant.writes)));
    if (factory === undefined) {
      await work(tenant, signal);
      return { rate: 0 };
    }
    let throttled = false;
    const onError = (e: PoolEvents['pool:taskError']) => {
      if (isThrottling(e.error)) throttled = true;
    };
    tenant.pool.on('pool:taskError', onError);
    try {
      await work(tenant, signal);
    } finally {
      tenant.pool.off('pool:taskError', onError);
      if (throttled) {
        try {
          this.#budget(factory, this.#promotionName(tenant));
        } catch {
          // Promotion is an optimisation: without it the tenant stays small until a factory works.
        }
      }
    }
    return { rate: 0 };
  }

  /** A large tenant's writes in its prefix's schedule; `unavailable` when the budget cannot be built. */
  async #runBooked<T extends TenantRateRequest>(
    factory: RateBudgetFactory,
    tenant: T,
    window: RateRunWindow,
    reportFailures: ReportFailure[],
    work: (tenant: T, signal: AbortSignal) => Promise<void>,
  ): Promise<RateResult> {
    let budget: RateBudget;
    try {
      budget = this.#bookingBudget(factory, tenant);
    } catch (unavailable) {
      // A budget that cannot even be built is one more way of "no slots", for this tenant only (its writes
      // are redelivered; the other tenants go on).
      return { unavailable };
    }
    const result = await runUnderRate(
      budget,
      {
        pool: tenant.pool,
        writes: tenant.writes,
        inFlight: Math.min(this.config.poolConcurrency, tenant.writes),
        maxWaitMs: tenant.maxWaitMs,
        spreadOver: this.#striped(tenant) ? this.#stripes : 1,
      },
      { ...window, releaseTimeoutMs: this.#releaseTimeoutMs },
      this.writeCounts?.watch(tenantPrefix(tenant.tenant)),
      (signal) => work(tenant, signal),
    );
    if ('unavailable' in result) return result;
    for (const error of result.reportErrors ?? []) reportFailures.push({ prefix: budget.name, error });
    return { rate: result.rate };
  }

  #prefixName(tenant: string): string {
    return `prefix:${this.config.bucketName}/t=${tenant}/`;
  }

  /** Whether the tenant's writes book a stripe of its sharded budget: all go to sharded resources. */
  #striped(tenant: TenantRateRequest): boolean {
    return this.#stripes > 0 && allSharded(this.config, tenant.resources);
  }

  /**
   * The budget a holder books: its tenant prefix's, or its sharded budget's stripes as one: a stripe at
   * random, and a second when that one is booked past the holder's wait (`TwoChoiceRateBudget`).
   */
  #bookingBudget(factory: RateBudgetFactory, tenant: TenantRateRequest): RateBudget {
    if (!this.#striped(tenant)) return this.#budget(factory, this.#prefixName(tenant.tenant));
    this.#stripedBookers.set(this.#promotionName(tenant), true);
    // A new stripe starts at its share of one prefix's rate: S3 keeps a tenant's fresh shard prefixes in one
    // partition until their load has run a while, and the stripes climb from there (slow start) as it splits.
    const startRate = this.config.s3PrefixWriteRate / this.#stripes;
    const stripes = Array.from({ length: this.#stripes }, (_, stripe) =>
      this.#budget(
        factory,
        stripeBudgetName(this.config.bucketName, tenant.tenant, stripe, this.#stripes),
        startRate,
      ),
    );
    return new TwoChoiceRateBudget(`${this.#prefixName(tenant.tenant)}s=*`, stripes, this.random);
  }

  /** The budget whose presence in the cache promotes a small tenant: its prefix's, or its first stripe. */
  #promotionName(tenant: TenantRateRequest): string {
    return this.#striped(tenant)
      ? stripeBudgetName(this.config.bucketName, tenant.tenant, 0, this.#stripes)
      : this.#prefixName(tenant.tenant);
  }

  #budget(factory: RateBudgetFactory, name: string, startRate?: number): RateBudget {
    let budget = this.#budgets.get(name);
    if (budget === undefined) {
      budget = factory(name, this.config.s3PrefixWriteRate, startRate);
      this.#budgets.set(name, budget);
    }
    return budget;
  }
}
