import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoSemaphore } from '../../semaphore/dynamo-semaphore.js';
import { SemaphoreTimeoutError } from '../../semaphore/errors.js';
import { permitsFor } from '../../semaphore/permits-for.js';
import type { Semaphore } from '../../semaphore/types.js';
import { type ConcurrencyTarget, withPermits } from '../../semaphore/with-permits.js';
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

/** One tenant's pool and how much work it has in this invocation. */
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
  readonly #semaphores = new Map<string, Semaphore>();
  readonly #factory: SemaphoreFactory | undefined;
  readonly #prefixLimit: number;

  constructor(
    private readonly config: IngestConfig,
    dynamodb: DynamoDBClient | undefined,
    factory?: SemaphoreFactory,
  ) {
    this.#prefixLimit = permitsFor({
      ratePerSecond: config.s3PrefixWriteRate,
      latencyMs: ASSUMED_WRITE_LATENCY_MS,
    });
    const table = config.semaphoreTable;
    this.#factory =
      factory ??
      (table === undefined || dynamodb === undefined
        ? undefined
        : (name, limit) => new DynamoSemaphore({ client: dynamodb, tableName: table, name, limit }));
  }

  /** Permits one prefix may have in flight fleet-wide. */
  get prefixLimit(): number {
    return this.#prefixLimit;
  }

  /**
   * Runs `work(tenant)` for every tenant under its permits. `work` must not throw. Resolves with each
   * tenant's result; a tenant whose permits could not be had by `window.deadline` does not run.
   */
  async run(
    tenants: readonly TenantPermitRequest[],
    window: PermitWindow,
    work: (tenant: string) => Promise<void>,
  ): Promise<Map<string, PermitResult>> {
    const results = new Map<string, PermitResult>();
    const factory = this.#factory;
    if (factory === undefined) {
      await Promise.all(
        tenants.map(async (t) => {
          t.pool.setConcurrency(Math.max(1, Math.min(this.config.poolConcurrency, t.writes)));
          await work(t.tenant);
          results.set(t.tenant, { permits: 0 });
        }),
      );
      return results;
    }

    const large = tenants.filter((t) => t.writes >= SMALL_TENANT_WRITES);
    const small = tenants.filter((t) => t.writes < SMALL_TENANT_WRITES);
    const jobs: Promise<void>[] = large.map((t) =>
      this.#runUnder(
        this.#semaphore(factory, `prefix:${this.config.bucketName}/t=${t.tenant}/`, this.#prefixLimit),
        t.pool,
        Math.min(this.#prefixLimit, this.config.poolConcurrency, t.writes),
        window,
        () => work(t.tenant),
      ).then((result) => {
        results.set(t.tenant, result);
      }),
    );

    const sharedLimit = this.#prefixLimit * SMALL_TENANTS_PREFIX_SHARE;
    const sharedName = `bucket:${this.config.bucketName}/small-tenants`;
    // Each small tenant needs at least one permit of the shared lease, so a group never outnumbers what the
    // semaphore can grant. Sized from the semaphore's actual limit: a factory may build it smaller than asked
    // (a table configured with fewer permits), and a group larger than the grant would run one write per
    // tenant over it.
    const shared = small.length === 0 ? undefined : this.#semaphore(factory, sharedName, sharedLimit);
    const groupSize = Math.max(1, Math.floor((shared?.limit ?? sharedLimit) / 2));
    for (let i = 0; shared !== undefined && i < small.length; i += groupSize) {
      const group = small.slice(i, i + groupSize);
      const want = Math.min(
        sharedLimit,
        this.config.poolConcurrency,
        group.reduce((sum, t) => sum + t.writes, 0),
      );
      jobs.push(
        this.#runUnder(
          shared,
          new PoolGroup(group),
          Math.max(want, group.length),
          window,
          async () => {
            await Promise.all(group.map((t) => work(t.tenant)));
          },
          group.length,
        ).then((result) => {
          for (const t of group) results.set(t.tenant, result);
        }),
      );
    }
    await Promise.all(jobs);
    return results;
  }

  #semaphore(factory: SemaphoreFactory, name: string, limit: number): Semaphore {
    let semaphore = this.#semaphores.get(name);
    if (semaphore === undefined) {
      semaphore = factory(name, limit);
      this.#semaphores.set(name, semaphore);
    }
    return semaphore;
  }

  async #runUnder(
    semaphore: Semaphore,
    target: ConcurrencyTarget,
    want: number,
    window: PermitWindow,
    body: () => Promise<void>,
    min = 1,
  ): Promise<PermitResult> {
    const capped = Math.min(want, semaphore.limit);
    try {
      return await withPermits(
        semaphore,
        target,
        {
          want: capped,
          min: Math.min(min, capped),
          deadline: window.deadline,
          signal: window.signal,
          leaseMs: window.leaseMs,
        },
        async (lease) => {
          await body();
          return { permits: lease.permits };
        },
      );
    } catch (err) {
      // `body` never throws, so this is the acquire: out of time, aborted, or DynamoDB unreachable. Only this
      // tenant's writes are redelivered; the rest of the batch goes on.
      return {
        unavailable: window.signal.aborted
          ? new SemaphoreTimeoutError(semaphore.name, min, window.deadline)
          : err,
      };
    }
  }
}
