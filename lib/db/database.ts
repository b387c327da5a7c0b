import type { ExecutorPool } from '../pool/index.js';
import { ResourceNotFoundError } from './errors.js';
import { assertResource, assertTenant, DEFAULT_TENANT, normalizePrefix } from './keys.js';
import type { ObjectStore } from './object-store.js';
import { type Document, Resource } from './resource.js';
import { type JsonSchema, SchemaRegistry } from './schema.js';
import { assertShardCount } from './shard-hash.js';
import { StorageCalls } from './storage-calls.js';

export interface DatabaseOptions {
  /**
   * Where the objects live: `S3ObjectStore` (an SDK client + bucket), `MemoryObjectStore`, or your own.
   * Not closed by `disconnect()`: whoever made it owns it.
   * @example { store: new S3ObjectStore(createS3Client(), 'my-bucket') }
   */
  store: ObjectStore;
  /**
   * The pool every storage request runs through (one task per S3 request: priority, retries, timeouts,
   * concurrency). Not stopped by `disconnect()`: whoever made it owns it. Without one, requests go straight
   * to storage, unbounded.
   * @default undefined (no pool)
   * @example { pool: new ExecutorPool({ concurrency: 50, retries: 3 }) }
   */
  pool?: ExecutorPool;
  /**
   * Every key lives under `<prefix>t=<tenant>/`; must match `TENANT_PATTERN`.
   * @default 'default'
   * @example { tenant: 'acme' }
   */
  tenant?: string;
  /**
   * Key prefix before `t=<tenant>/` (normalised to `''` or `seg/.../`).
   * @default ''
   * @example { prefix: 'prod/ingest' }
   */
  prefix?: string;
}

export interface CreateResourceOptions {
  /**
   * The resource name (`RESOURCE_PATTERN`); keys live under `<prefix>t=<tenant>/r=<name>/`.
   * @example { name: 'orders' }
   */
  name: string;
  /**
   * JSON Schema (Ajv 8, strict) of the user fields (not `id`/`createdAt`/`updatedAt`/`version`).
   * @default undefined (schemaless)
   * @example { schema: { type: 'object', properties: { total: { type: 'number' } }, required: ['total'] } }
   */
  schema?: JsonSchema;
  /**
   * How many S3 prefixes the records are spread over, an integer in 1..4096 (`MAX_SHARDS`). With N > 1 a
   * record lives at `<prefix>t=<tenant>/r=<name>/s=<shard>/id=<id>.json`, its shard being the first 4 bytes
   * of SHA-256 of the UTF-8 id, big-endian, mod N (`shardOf`; the label zero-padded to 4 digits); 1 keeps
   * the unsharded layout `.../r=<name>/id=<id>.json`. S3 gives each partitioned prefix ~3,500 writes/s, so
   * choose N = ceil(peak writes/s / 3,000) (room for an uneven hash and retries), rounded up to a power of
   * two: 10,000 writes/s -> 4. N is fixed for the resource's life (every reader and writer declares the
   * same N; records never move), and a new prefix answers 503 SlowDown while S3 splits it, so shard ahead
   * of the peak (docs/decisions/sharded-keys.md). A `list` page costs one LIST per shard.
   * @default 1
   * @example { name: 'events', shards: 4 }
   */
  shards?: number;
}

/**
 * A per-tenant document store, in the spirit of s3db.js, over the store and pool it is given: every storage
 * request is one task of the pool, whose per-attempt signal reaches the store. Usable as soon as it is
 * built (opening does no I/O: credentials and bucket are checked by the first request). To open one from a
 * connection string, see `openDatabase`.
 */
export class Database {
  readonly tenant: string;
  readonly bucket: string;
  /** Normalised key prefix (`''` or `seg/`). */
  readonly prefix: string;
  readonly store: ObjectStore;
  /** The pool requests run through; `undefined` when they go straight to storage. */
  readonly pool: ExecutorPool | undefined;
  readonly #calls: StorageCalls;
  readonly #resources = new Map<string, Resource<Document>>();
  readonly #schemas = new SchemaRegistry();

  constructor(options: DatabaseOptions) {
    const tenant = options.tenant ?? DEFAULT_TENANT;
    assertTenant(tenant);
    this.tenant = tenant;
    this.prefix = normalizePrefix(options.prefix ?? '');
    this.store = options.store;
    this.bucket = options.store.bucket;
    this.pool = options.pool;
    this.#calls = new StorageCalls(options.pool);
  }

  /** False once `disconnect()` was called. */
  get isConnected(): boolean {
    return this.#calls.isOpen;
  }

  /**
   * Refuses later calls (`DatabaseNotConnectedError`) and waits for the pool to drain, so queued and
   * in-flight calls finish. The pool and the store are left to their owner.
   */
  async disconnect(): Promise<void> {
    this.#calls.close();
    await this.pool?.drain();
  }

  /**
   * Declares a resource (compiling its schema once). Declaring an existing name replaces its schema and
   * shard count. A bad `shards` is an `InvalidShardCountError`, before anything is declared.
   */
  async createResource<T extends Document = Document>(options: CreateResourceOptions): Promise<Resource<T>> {
    assertResource(options.name);
    assertShardCount(options.shards ?? 1);
    const { schema } = options;
    const validate = schema !== undefined ? this.#schemas.compile(options.name, schema) : undefined;
    const validateFields =
      schema !== undefined ? this.#schemas.compileFields(options.name, schema) : undefined;
    const resource = new Resource<T>({
      name: options.name,
      tenant: this.tenant,
      prefix: this.prefix,
      store: this.store,
      calls: this.#calls,
      validate,
      validateFields,
      ...(options.shards !== undefined ? { shards: options.shards } : {}),
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
}
