import type { S3Client } from '@aws-sdk/client-s3';
import { S3BehaviourModel, type S3BehaviourOptions } from '../local/s3-behaviour/s3-behaviour-model.js';
import { AUTOTUNE_DEFAULTS, ExecutorPool, type ExecutorPoolOptions } from '../pool/index.js';
import { parseConnectionString } from './connection-string.js';
import { ConnectionStringError, DatabaseNotConnectedError, ResourceNotFoundError } from './errors.js';
import { assertResource, assertTenant, DEFAULT_TENANT } from './keys.js';
import { type BehaviourModel, MemoryObjectStore } from './memory-object-store.js';
import type { ObjectStore } from './object-store.js';
import { type CallOptions, type Document, Resource } from './resource.js';
import { type CreateS3ClientOptions, createS3Client } from './s3-client.js';
import { S3ObjectStore } from './s3-object-store.js';
import { type JsonSchema, SchemaRegistry } from './schema.js';

/** Pool settings a Database uses when given none (the pool's own defaults for the rest). */
export const DATABASE_POOL_DEFAULTS = { concurrency: 100 } as const;

export interface DatabaseClientOptions extends Omit<CreateS3ClientOptions, 'endpoint' | 'credentials'> {
  /**
   * This Database's own ExecutorPool, every storage call goes through it. Default
   * `{ concurrency: 100 }` (other options: the pool's defaults: 3 retries, 30 s per-attempt timeout).
   * `false`: no pool, calls go straight to storage, unbounded (the "Promise.all" engine).
   */
  executorPool?: ExecutorPoolOptions | false;
  /** An S3 client to use (see `DatabaseOptions.client`). */
  client?: S3Client;
  /**
   * `memory://` only: drive the in-process store through an S3 behaviour model (latency, per-prefix
   * throttling, faults), given as a model (shared, e.g. across Databases or read for stats) or as its
   * options. Default: none (instant, never fails).
   */
  behaviour?: S3BehaviourModel | BehaviourModel | S3BehaviourOptions;
  /** Storage to use instead of the one the connection string names (tests, custom backends). */
  store?: ObjectStore;
}

export interface DatabaseOptions {
  /** `s3://bucket/prefix`, `http(s)://key:secret@host:port/bucket/prefix` or `memory://bucket/prefix`. */
  connectionString: string;
  /** Every key lives under `<prefix>t=<tenant>/`. Default `'default'`. */
  tenant?: string;
  /**
   * An S3 client to share (create it with `createS3Client`, once per container). Not destroyed by
   * `disconnect()`. Default: the Database creates its own from the connection string and destroys it.
   */
  client?: S3Client;
  clientOptions?: DatabaseClientOptions;
}

export interface CreateResourceOptions {
  name: string;
  /** JSON Schema of the user fields (not `id`/`createdAt`/`updatedAt`/`version`). Default: schemaless. */
  schema?: JsonSchema;
}

/** What `db.client` exposes: the pool, the storage and (S3 only) the SDK client. */
export interface DatabaseClient {
  /** This Database's pool; `undefined` with `executorPool: false`. */
  readonly executorPool: ExecutorPool | undefined;
  readonly store: ObjectStore;
  readonly s3: S3Client | undefined;
  /** The behaviour model driving a `memory://` store, if any. */
  readonly behaviour: BehaviourModel | undefined;
}

/** An autotuned pool may grow to its ceiling: size the sockets for that, not for where it starts. */
function autotuneCeiling(options: ExecutorPoolOptions | false): number {
  if (options === false || (options.concurrency !== 'auto' && options.autotune?.enabled !== true)) return 0;
  return options.autotune?.maxConcurrency ?? AUTOTUNE_DEFAULTS.maxConcurrency;
}

function isModel(value: NonNullable<DatabaseClientOptions['behaviour']>): value is BehaviourModel {
  return typeof (value as BehaviourModel).decide === 'function';
}

/**
 * A per-tenant document store on S3 (or in-process), in the spirit of s3db.js. Owns one ExecutorPool;
 * every S3 request is one pool task whose signal reaches `client.send(cmd, { abortSignal })`.
 */
export class Database {
  readonly tenant: string;
  readonly bucket: string;
  /** Normalised key prefix from the connection string (`''` or `seg/`). */
  readonly prefix: string;
  readonly client: DatabaseClient;
  readonly #ownsClient: boolean;
  readonly #resources = new Map<string, Resource<Document>>();
  readonly #schemas = new SchemaRegistry();
  #connected = false;

  constructor(options: DatabaseOptions) {
    const tenant = options.tenant ?? DEFAULT_TENANT;
    assertTenant(tenant);
    this.tenant = tenant;
    const target = parseConnectionString(options.connectionString);
    this.prefix = target.prefix;
    const clientOptions = options.clientOptions ?? {};
    const poolOptions = clientOptions.executorPool ?? DATABASE_POOL_DEFAULTS;
    const pool =
      poolOptions === false
        ? undefined
        : new ExecutorPool({
            ...poolOptions,
            concurrency: poolOptions.concurrency ?? DATABASE_POOL_DEFAULTS.concurrency,
          });

    let store: ObjectStore;
    let s3: S3Client | undefined;
    let behaviour: BehaviourModel | undefined;
    const injected = options.client ?? clientOptions.client;
    if (clientOptions.behaviour !== undefined && target.kind !== 'memory') {
      throw new ConnectionStringError('clientOptions.behaviour applies to memory:// only');
    }
    if (clientOptions.store !== undefined) {
      store = clientOptions.store;
      this.#ownsClient = false;
    } else if (target.kind === 'memory') {
      const b = clientOptions.behaviour;
      behaviour = b === undefined ? undefined : isModel(b) ? b : new S3BehaviourModel(b);
      store = new MemoryObjectStore({ bucket: target.bucket, ...(behaviour ? { model: behaviour } : {}) });
      this.#ownsClient = false;
    } else {
      s3 =
        injected ??
        createS3Client({
          ...clientOptions,
          maxSockets: Math.max(
            clientOptions.maxSockets ?? 0,
            pool?.concurrency ?? 0,
            autotuneCeiling(poolOptions),
            100,
          ),
          ...(target.endpoint !== undefined ? { endpoint: target.endpoint } : {}),
          ...(target.credentials !== undefined ? { credentials: target.credentials } : {}),
          ...(target.region !== undefined ? { region: target.region } : {}),
        });
      this.#ownsClient = injected === undefined;
      store = new S3ObjectStore(s3, target.bucket);
    }
    this.bucket = store.bucket;
    this.client = { executorPool: pool, store, s3, behaviour };
  }

  get isConnected(): boolean {
    return this.#connected;
  }

  /** Makes the Database usable. Does no network I/O: credentials and bucket are checked by the first call. */
  async connect(): Promise<void> {
    if (this.client.executorPool?.isStopped) throw new DatabaseNotConnectedError();
    this.#connected = true;
  }

  /**
   * Lets queued and in-flight calls finish, stops the pool and destroys the S3 client if this Database
   * created it (an injected client is left open). Later calls reject with `DatabaseNotConnectedError`.
   */
  async disconnect(): Promise<void> {
    this.#connected = false;
    const pool = this.client.executorPool;
    if (pool !== undefined) {
      await pool.drain();
      pool.stop();
    }
    if (this.#ownsClient) this.client.s3?.destroy();
  }

  /** Declares a resource (compiling its schema once). Declaring an existing name replaces its schema. */
  async createResource<T extends Document = Document>(options: CreateResourceOptions): Promise<Resource<T>> {
    assertResource(options.name);
    const validate =
      options.schema !== undefined ? this.#schemas.compile(options.name, options.schema) : undefined;
    const resource = new Resource<T>({
      name: options.name,
      tenant: this.tenant,
      prefix: this.prefix,
      store: this.client.store,
      run: (fn, call) => this.#run(fn, call),
      validate,
    });
    this.#resources.set(options.name, resource as unknown as Resource<Document>);
    return resource;
  }

  /** A resource created earlier on this Database; `ResourceNotFoundError` otherwise. */
  resource<T extends Document = Document>(name: string): Resource<T> {
    const resource = this.#resources.get(name);
    if (resource === undefined) throw new ResourceNotFoundError(name);
    return resource as unknown as Resource<T>;
  }

  /** Names of the resources created on this Database. */
  get resources(): string[] {
    return [...this.#resources.keys()];
  }

  #run<R>(
    fn: (signal: AbortSignal | undefined, attempt: number) => Promise<R>,
    call: CallOptions | undefined,
  ): Promise<R> {
    if (!this.#connected) return Promise.reject(new DatabaseNotConnectedError());
    const pool = this.client.executorPool;
    const perCall = call?.executorPool;
    if (pool === undefined || perCall === false) {
      const signal = call?.signal;
      if (signal?.aborted) return Promise.reject(signal.reason);
      return fn(signal, 1);
    }
    const signal = perCall?.signal ?? call?.signal;
    const options = signal !== undefined ? { ...perCall, signal } : perCall;
    return pool.enqueue((ctx) => fn(ctx.signal, ctx.attempt), options);
  }
}
