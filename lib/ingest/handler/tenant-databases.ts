import type { S3Client } from '@aws-sdk/client-s3';
import { LRUCache } from 'lru-cache';
import { Database } from '../../db/database.js';
import type { ObjectStore } from '../../db/object-store.js';
import type { JsonSchema } from '../../db/schema.js';
import type { ConcurrencyBudget } from '../../pool/concurrency-budget.js';
import type { ExecutorPool } from '../../pool/executor-pool.js';
import type { IngestConfig } from '../config.js';

/** Backoff of a throttled write: short enough to fit a Lambda invocation, long enough to let S3 recover. */
export const WRITE_RETRY_DELAY_MS = 100;
export const WRITE_MAX_RETRY_DELAY_MS = 3000;

export interface TenantDatabasesOptions {
  readonly config: IngestConfig;
  /** The container's shared S3 client (one socket pool for every tenant). */
  readonly s3: S3Client;
  /** The invocation budget every tenant pool draws from. */
  readonly budget: ConcurrencyBudget;
  /** Storage to use instead of S3 (tests run the handler on an in-process store). */
  readonly store?: ObjectStore;
}

/** A tenant's Database with its pool, ready to write (every declared resource created). */
export interface TenantDatabase {
  readonly db: Database;
  readonly pool: ExecutorPool;
}

function retire(entry: TenantDatabase): void {
  entry.db.disconnect().catch(() => {
    // Eviction happens between writes; a failing drain has nothing left to report to.
  });
}

/**
 * The per-tenant Databases of one container, kept warm across invocations in a bounded LRU (one pool each,
 * so one tenant's flood never starves another). An evicted tenant's Database is drained and disconnected;
 * the shared S3 client stays open.
 */
export class TenantDatabases {
  readonly #cache: LRUCache<string, TenantDatabase>;
  /** Entries handed out by `get` and not yet `release`d (the running invocation's tenants), with a count. */
  readonly #inUse = new Map<TenantDatabase, number>();
  /** In-use entries the LRU evicted: disconnected on their last `release`, not under a running write. */
  readonly #evicted = new Set<TenantDatabase>();
  #closing = false;

  constructor(private readonly options: TenantDatabasesOptions) {
    this.#cache = new LRUCache<string, TenantDatabase>({
      max: options.config.tenantCacheSize,
      dispose: (entry) => {
        if (this.#closing) return;
        // A batch with more tenants than the cache evicts tenants it is about to write to: disconnecting
        // one now would fail all its writes (DatabaseNotConnectedError) in every such batch.
        if (this.#inUse.has(entry)) this.#evicted.add(entry);
        else retire(entry);
      },
    });
  }

  get size(): number {
    return this.#cache.size;
  }

  /** The tenant's Database, opened on first use; kept from eviction until `release(entry)`. */
  async get(tenant: string): Promise<TenantDatabase> {
    let entry = this.#cache.get(tenant);
    if (entry === undefined) {
      entry = await this.#open(tenant);
      this.#cache.set(tenant, entry);
    }
    this.#inUse.set(entry, (this.#inUse.get(entry) ?? 0) + 1);
    return entry;
  }

  /** Ends one `get`'s use; an entry the LRU evicted meanwhile is disconnected now. */
  release(entry: TenantDatabase): void {
    const count = (this.#inUse.get(entry) ?? 0) - 1;
    if (count > 0) {
      this.#inUse.set(entry, count);
      return;
    }
    this.#inUse.delete(entry);
    if (this.#evicted.delete(entry)) retire(entry);
  }

  async #open(tenant: string): Promise<TenantDatabase> {
    const { config, s3, budget, store } = this.options;
    const db = new Database({
      connectionString: store === undefined ? `s3://${config.bucketName}` : `memory://${config.bucketName}`,
      tenant,
      client: s3,
      clientOptions: {
        ...(store === undefined ? {} : { store }),
        executorPool: {
          concurrency: config.poolConcurrency,
          budget,
          retries: config.writeRetries,
          timeout: config.writeTimeoutMs,
          retryDelay: WRITE_RETRY_DELAY_MS,
          maxRetryDelay: WRITE_MAX_RETRY_DELAY_MS,
        },
      },
    });
    await db.connect();
    for (const [name, schema] of Object.entries(config.resources)) {
      await db.createResource(
        Object.keys(schema).length === 0 ? { name } : { name, schema: schema as JsonSchema },
      );
    }
    const pool = db.client.executorPool;
    if (pool === undefined) throw new Error('tenant Database was created without its pool');
    return { db, pool };
  }

  /** Drains and disconnects every cached Database (tests and the local runner's shutdown). */
  async close(): Promise<void> {
    const entries = [...this.#cache.values(), ...this.#evicted];
    this.#evicted.clear();
    this.#inUse.clear();
    this.#closing = true;
    this.#cache.clear();
    this.#closing = false;
    await Promise.all(entries.map((entry) => entry.db.disconnect()));
  }
}
