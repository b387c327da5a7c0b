import type { S3Client } from '@aws-sdk/client-s3';
import { ExecutorPool, type ExecutorPoolOptions } from '../pool/index.js';
import type { BehaviourModel } from './behaviour-model.js';
import { parseConnectionString } from './connection-string.js';
import { Database } from './database.js';
import { ConnectionStringError } from './errors.js';
import { assertTenant, DEFAULT_TENANT } from './keys.js';
import { MemoryObjectStore } from './memory-object-store.js';
import type { ObjectStore } from './object-store.js';
import { type CreateS3ClientOptions, createS3Client } from './s3-client.js';
import { S3ObjectStore } from './s3-object-store.js';
import { s3Autotune } from './s3-rate-prior.js';

/** Pool settings `openDatabase` uses when given none (the pool's own defaults for the rest). */
export const DATABASE_POOL_DEFAULTS = { concurrency: 100 } as const;

export interface OpenDatabaseOptions {
  /**
   * Every key lives under `<prefix>t=<tenant>/`.
   * @default 'default'
   * @example { tenant: 'acme' }
   */
  tenant?: string;
  /**
   * Options of the Database's own `ExecutorPool` (stopped by `disconnect()`). `false`: no pool, requests
   * go straight to storage, unbounded.
   * @default { concurrency: 100 } (the pool's defaults for the rest: 3 retries, 30 s per-attempt timeout;
   * `concurrency: 'auto'` without an `autotune` gets `s3Autotune()`, which starts from S3's 3,500 writes/s
   * per prefix, `S3_PREFIX_WRITES_PER_SECOND`)
   * @example { pool: { concurrency: 50, retries: 5, timeout: 2_000 } }
   */
  pool?: ExecutorPoolOptions | false;
  /**
   * An S3 client to share (create it once per container with `createS3Client`); not destroyed by
   * `disconnect()`. Otherwise the Database creates its own from the connection string and `clientOptions`,
   * with sockets for its pool's concurrency (at least 100), and destroys it on `disconnect()`.
   * @default undefined (own client)
   * @example { client: createS3Client({ maxSockets: 200 }) }
   */
  client?: S3Client;
  /**
   * Settings of the Database's own client (ignored with `client`); the endpoint and credentials come from
   * the connection string.
   * @default {} (see `createS3Client`)
   * @example { clientOptions: { region: 'eu-west-1', requestTimeout: 5_000 } }
   */
  clientOptions?: Omit<CreateS3ClientOptions, 'endpoint' | 'credentials'>;
  /**
   * `memory://` only: drive the in-process store through a model of S3's behaviour (latency, per-prefix
   * throttling, faults), e.g. lib/local's `S3BehaviourModel`. Share one to share its rate limits.
   * @default undefined (instant, never fails)
   * @example { behaviour: new S3BehaviourModel({ writesPerSecond: 3500 }) }
   */
  behaviour?: BehaviourModel;
}

/** The pool's options with `concurrency: 'auto'` resolved: the caller's tuner, else one primed with S3's rate. */
function withS3Tuner(options: ExecutorPoolOptions): ExecutorPoolOptions {
  if (options.concurrency !== 'auto' || options.autotune !== undefined) return options;
  return { ...options, autotune: s3Autotune() };
}

/** A Database that owns the pool and client it was opened with: `disconnect()` releases them too. */
class OpenedDatabase extends Database {
  readonly #ownedClient: S3Client | undefined;

  constructor(options: ConstructorParameters<typeof Database>[0], ownedClient: S3Client | undefined) {
    super(options);
    this.#ownedClient = ownedClient;
  }

  override async disconnect(): Promise<void> {
    await super.disconnect();
    this.pool?.stop();
    this.#ownedClient?.destroy();
  }
}

/**
 * Opens a Database from a connection string: `s3://bucket/prefix` (AWS, default credential chain,
 * `?region=`), `http(s)://key:secret@host:port/bucket/prefix` (an S3-compatible endpoint, path-style) or
 * `memory://bucket/prefix` (in-process). Builds the store, the pool and (unless one is given) the S3 client,
 * and releases what it built on `disconnect()`. For a store and pool you build yourself, use
 * `new Database({ tenant, store, pool })`.
 * @example
 * const db = openDatabase('s3://my-bucket/app', { tenant: 'acme', pool: { concurrency: 50 } });
 */
export function openDatabase(connectionString: string, options: OpenDatabaseOptions = {}): Database {
  const target = parseConnectionString(connectionString);
  // Checked before anything is built, so a refused tenant leaks no pool or client.
  assertTenant(options.tenant ?? DEFAULT_TENANT);
  if (options.behaviour !== undefined && target.kind !== 'memory') {
    throw new ConnectionStringError('the behaviour option applies to memory:// only');
  }
  const given = options.pool ?? DATABASE_POOL_DEFAULTS;
  const poolOptions =
    given === false
      ? undefined
      : withS3Tuner({ ...given, concurrency: given.concurrency ?? DATABASE_POOL_DEFAULTS.concurrency });
  const pool = poolOptions === undefined ? undefined : new ExecutorPool(poolOptions);

  let store: ObjectStore;
  let ownedClient: S3Client | undefined;
  if (target.kind === 'memory') {
    store = new MemoryObjectStore({
      bucket: target.bucket,
      ...(options.behaviour === undefined ? {} : { model: options.behaviour }),
    });
  } else {
    const clientOptions = options.clientOptions ?? {};
    ownedClient =
      options.client === undefined
        ? createS3Client({
            ...clientOptions,
            maxSockets: Math.max(
              clientOptions.maxSockets ?? 0,
              pool?.concurrency ?? 0,
              // An autotuned pool may grow to its ceiling: size the sockets for that, not for where it starts.
              poolOptions?.autotune?.maxConcurrency ?? 0,
              100,
            ),
            ...(target.endpoint !== undefined ? { endpoint: target.endpoint } : {}),
            ...(target.credentials !== undefined ? { credentials: target.credentials } : {}),
            ...(target.region !== undefined ? { region: target.region } : {}),
          })
        : undefined;
    store = new S3ObjectStore(options.client ?? ownedClient!, target.bucket);
  }
  return new OpenedDatabase(
    {
      store,
      prefix: target.prefix,
      ...(pool === undefined ? {} : { pool }),
      ...(options.tenant === undefined ? {} : { tenant: options.tenant }),
    },
    ownedClient,
  );
}
