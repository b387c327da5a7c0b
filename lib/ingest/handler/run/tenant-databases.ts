import { LRUCache } from 'lru-cache';
import { Database } from '../../../db/database.js';
import type { ObjectStore } from '../../../db/object-store.js';
import type { JsonSchema } from '../../../db/schema.js';
import type { ConcurrencyBudget } from '../../../pool/concurrency-budget.js';
import { ExecutorPool } from '../../../pool/executor-pool.js';
import type { IngestConfig } from '../../config.js';

/** Backoff of a retried write, ms: short enough to fit a Lambda invocation, long enough to let S3 recover. */
export const WRITE_RETRY_BACKOFF = { firstDelayMs: 100, maxDelayMs: 3_000 } as const;

export interface TenantDatabasesOptions {
  readonly config: IngestConfig;
  /** The container's storage, shared by every tenant (one S3 client, one socket pool). */
  readonly store: ObjectStore;
  /** The invocation budget every tenant pool draws from. */
  readonly budget: ConcurrencyBudget;
}

/** A tenant's Database with its own pool, ready to write (every declared resource created). */
export interface TenantDatabase {
  readonly tenant: string;
  readonly db: Database;
  readonly pool: ExecutorPool;
}

/** Lets the tenant's calls finish, then stops its pool (the shared store stays open). */
async function retire(entry: TenantDatabase): Promise<void> {
  try {
    await entry.db.disconnect();
  } finally {
    entry.pool.stop();
  }
}

function retireInBackground(entry: TenantDatabase): void {
  retire(entry).catch(() => {
    // Eviction happens between writes; a failing drain has nothing left to report to.
  });
}

/**
 * The per-tenant Databases of one container, kept warm across invocations in a bounded LRU (one pool each,
 * so one tenant's flood never starves another). An evicted tenant's Database is drained and its pool
 * stopped; the shared store stays open.
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
        else retireInBackground(entry);
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
    if (this.#evicted.delete(entry)) retireInBackground(entry);
  }

  async #open(tenant: string): Promise<TenantDatabase> {
    const { config, store, budget } = this.options;
    const pool = new ExecutorPool({
      concurrency: config.poolConcurrency,
      budget,
      retries: config.writeRetries,
      timeout: config.writeTimeoutMs,
      retryDelay: WRITE_RETRY_BACKOFF.firstDelayMs,
      maxRetryDelay: WRITE_RETRY_BACKOFF.maxDelayMs,
    });
    try {
      const db = new Database({ tenant, store, pool });
      for (const [name, schema] of Object.entries(config.resources)) {
        const shards = config.resourceShards?.[name];
        await db.createResource({
          name,
          ...(Object.keys(schema).length === 0 ? {} : { schema: schema as JsonSchema }),
          ...(shards === undefined ? {} : { shards }),
        });
      }
      return { tenant, db, pool };
    } catch (error) {
      // Stryker disable next-line CallExpression: equivalent today, the pool is new and idle (declaring resources makes no storage call); kept so it never outlives a failed open
      pool.stop();
      throw error;
    }
  }

  /** Drains and disconnects every cached Database (tests and the local runner's shutdown). */
  async close(): Promise<void> {
    const entries = [...this.#cache.values(), ...this.#evicted];
    this.#evicted.clear();
    this.#inUse.clear();
    this.#closing = true;
    this.#cache.clear();
    this.#closing = false;
    await Promise.all(entries.map(retire));
  }
}
