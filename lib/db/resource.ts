import { randomUUID } from 'node:crypto';
import {
  ConflictError,
  CorruptRecordError,
  RecordExistsError,
  RecordNotFoundError,
  ValidationError,
} from './errors.js';
import { idFromKey, recordKey, resourcePrefix } from './keys.js';
import { type ObjectStore, PreconditionFailedError, type StoredObject } from './object-store.js';
import type { CallOptions, StorageCalls } from './storage-calls.js';

export type { CallOptions } from './storage-calls.js';

/** A record's user data: a JSON object. */
export type Document = Record<string, unknown>;

/** The fields the store maintains on every record. User data with these names is overwritten. */
export interface RecordFields {
  id: string;
  /** ISO 8601, set by `insert`/`upsert`, kept by `update`. */
  createdAt: string;
  /** ISO 8601, set by every write. */
  updatedAt: string;
  /** 1 on `insert`/`upsert`, +1 per `update`. */
  version: number;
}

export type StoredRecord<T extends Document = Document> = Omit<T, keyof RecordFields> & RecordFields;

const SYSTEM_FIELDS: ReadonlySet<string> = new Set(['id', 'createdAt', 'updatedAt', 'version']);

export interface InsertOptions extends CallOptions {
  /** The record id. Default: `data.id` when it is a string, else a random UUID. */
  id?: string;
}

export interface ListOptions extends CallOptions {
  /** Records per page, 1..1000. Default 100. */
  limit?: number;
  /** `cursor` of the previous page. */
  cursor?: string;
}

export interface ListPage<T extends Document = Document> {
  items: StoredRecord<T>[];
  /** Absent on the last page. */
  cursor?: string;
}

/** One item's outcome in `insertMany`, in input order. */
export type InsertManyResult<T extends Document = Document> =
  | { ok: true; id: string; record: StoredRecord<T> }
  | { ok: false; id: string | undefined; error: unknown };

/** What a Resource needs from its Database. */
export interface ResourceContext {
  name: string;
  tenant: string;
  prefix: string;
  store: ObjectStore;
  /** The Database's request runner (its pool, or direct calls). */
  calls: StorageCalls;
  /** Throws `ValidationError`; absent for schemaless resources. */
  validate: ((data: unknown) => void) | undefined;
}

function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function userFields(record: Document): Document {
  const out: Document = {};
  for (const key of Object.keys(record)) if (!SYSTEM_FIELDS.has(key)) out[key] = record[key];
  return out;
}

/**
 * One collection of records under `<prefix>t=<tenant>/r=<name>/`. Every storage call goes through the
 * Database's `StorageCalls` (its ExecutorPool, if it has one), one pool task per S3 request.
 */
export class Resource<T extends Document = Document> {
  readonly name: string;
  readonly #ctx: ResourceContext;
  readonly #prefix: string;

  constructor(ctx: ResourceContext) {
    this.#ctx = ctx;
    this.name = ctx.name;
    this.#prefix = resourcePrefix(ctx.tenant, ctx.name, ctx.prefix);
  }

  /** The S3 key of record `id` (validated). */
  keyOf(id: string): string {
    return recordKey(this.#ctx.tenant, this.name, id, this.#ctx.prefix);
  }

  /**
   * Creates a record; rejects with `RecordExistsError` if the id is taken (`If-None-Match: *`, 412).
   * A retry after a lost response that finds its own write in place resolves as a success.
   */
  async insert(data: T, options: InsertOptions = {}): Promise<StoredRecord<T>> {
    const fromData = isPlainObject(data) && typeof data.id === 'string' ? data.id : undefined;
    const id = options.id ?? fromData ?? randomUUID();
    const key = this.keyOf(id);
    const now = new Date().toISOString();
    const record = this.#build(data, id, now, now, 1);
    const body = JSON.stringify(record);
    try {
      await this.#ctx.calls.run(
        (signal, attempt) => this.#put(key, body, record, { ifNoneMatch: '*' }, signal, attempt > 1),
        options,
      );
    } catch (err) {
      if (err instanceof PreconditionFailedError) throw new RecordExistsError(this.name, id, { cause: err });
      throw err;
    }
    return record;
  }

  /** Reads a record; rejects with `RecordNotFoundError` if there is none. */
  async get(id: string, options: CallOptions = {}): Promise<StoredRecord<T>> {
    return (await this.#read(id, options)).record;
  }

  /**
   * Merges `patch` into the stored record (shallow), validates, and writes with `If-Match` on the ETag read:
   * `ConflictError` if the record changed in between, `RecordNotFoundError` if it is missing. Bumps
   * `version` and `updatedAt`; resolves to the updated record. Two pool tasks: the read and the write.
   */
  async update(id: string, patch: Partial<T>, options: CallOptions = {}): Promise<StoredRecord<T>> {
    if (!isPlainObject(patch)) {
      throw new ValidationError(this.name, [{ instancePath: '', field: '', message: 'must be an object' }]);
    }
    const { record: current, etag } = await this.#read(id, options);
    const merged = { ...userFields(current), ...userFields(patch) } as T;
    const record = this.#build(merged, id, current.createdAt, new Date().toISOString(), current.version + 1);
    const key = this.keyOf(id);
    const body = JSON.stringify(record);
    try {
      await this.#ctx.calls.run(
        (signal, attempt) => this.#put(key, body, record, { ifMatch: etag }, signal, attempt > 1),
        options,
      );
    } catch (err) {
      if (err instanceof PreconditionFailedError)
        throw new ConflictError(this.name, id, etag, { cause: err });
      throw err;
    }
    return record;
  }

  /**
   * Blind overwrite: one PUT, no read. The record starts over (`createdAt` = now, `version` 1), which is
   * what makes it the fast path for ingestion; use `update` to keep history fields.
   */
  async upsert(id: string, data: T, options: CallOptions = {}): Promise<StoredRecord<T>> {
    const key = this.keyOf(id);
    const now = new Date().toISOString();
    const record = this.#build(data, id, now, now, 1);
    const body = JSON.stringify(record);
    // Stryker disable next-line BooleanLiteral: an unconditional PUT never fails a precondition, so the retry flag is never read.
    await this.#ctx.calls.run((signal) => this.#put(key, body, record, {}, signal, false), options);
    return record;
  }

  /** Deletes a record; deleting a missing id succeeds. */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const key = this.keyOf(id);
    await this.#ctx.calls.run((signal) => this.#ctx.store.delete(key, { signal }), options);
  }

  /**
   * One page of records in id (key) order: a ListObjectsV2 of the resource prefix, then the page's GETs
   * through the pool. Records deleted between the listing and the read are left out, so a page may hold
   * fewer than `limit` items; `cursor` is absent on the last page.
   */
  async list(options: ListOptions = {}): Promise<ListPage<T>> {
    const limit = Math.min(1000, Math.max(1, Math.floor(options.limit ?? 100)));
    const page = await this.#ctx.calls.run(
      (signal) =>
        this.#ctx.store.list(
          {
            prefix: this.#prefix,
            maxKeys: limit,
            // Stryker disable next-line ConditionalExpression: both stores treat an undefined token as none.
            ...(options.cursor !== undefined ? { continuationToken: options.cursor } : {}),
          },
          { signal },
        ),
      options,
    );
    const ids = page.keys.flatMap((key) => {
      const id = idFromKey(this.#prefix, key);
      return id === undefined ? [] : [id];
    });
    const read = await Promise.all(
      ids.map((id) =>
        this.#read(id, options).then(
          (r) => r.record,
          (err: unknown) => {
            if (err instanceof RecordNotFoundError) return undefined;
            throw err;
          },
        ),
      ),
    );
    const items: StoredRecord<T>[] = [];
    for (const record of read) if (record !== undefined) items.push(record as StoredRecord<T>);
    return page.continuationToken !== undefined ? { items, cursor: page.continuationToken } : { items };
  }

  /** Number of records: pages through the keys (1,000 per request), reading no bodies. */
  async count(options: CallOptions = {}): Promise<number> {
    let total = 0;
    let token: string | undefined;
    do {
      const continuationToken = token;
      const page = await this.#ctx.calls.run(
        (signal) =>
          this.#ctx.store.list(
            { prefix: this.#prefix, maxKeys: 1000, ...(continuationToken ? { continuationToken } : {}) },
            { signal },
          ),
        options,
      );
      for (const key of page.keys) if (idFromKey(this.#prefix, key) !== undefined) total += 1;
      token = page.continuationToken;
    } while (token !== undefined);
    return total;
  }

  /**
   * Inserts every item through the pool (bounded by its concurrency) and resolves, in input order, to
   * each item's outcome: one failure (exists, invalid, throttled past retries) never fails the batch.
   * Ids come from `item.id` when it is a string, else are generated.
   */
  async insertMany(items: readonly T[], options: CallOptions = {}): Promise<InsertManyResult<T>[]> {
    return Promise.all(
      items.map((item) =>
        this.insert(item, options).then(
          (record): InsertManyResult<T> => ({ ok: true, id: record.id, record }),
          (error: unknown): InsertManyResult<T> => ({
            ok: false,
            id: isPlainObject(item) && typeof item.id === 'string' ? item.id : undefined,
            error,
          }),
        ),
      ),
    );
  }

  #build(data: unknown, id: string, createdAt: string, updatedAt: string, version: number): StoredRecord<T> {
    if (!isPlainObject(data)) {
      throw new ValidationError(this.name, [{ instancePath: '', field: '', message: 'must be an object' }]);
    }
    const user = userFields(data);
    this.#ctx.validate?.(user);
    return { ...user, id, createdAt, updatedAt, version } as StoredRecord<T>;
  }

  async #read(id: string, options: CallOptions): Promise<{ record: StoredRecord<T>; etag: string }> {
    const key = this.keyOf(id);
    const object = await this.#ctx.calls.run((signal) => this.#ctx.store.get(key, { signal }), options);
    if (object === undefined) throw new RecordNotFoundError(this.name, id);
    return { record: this.#parse(key, object), etag: object.etag };
  }

  #parse(key: string, object: StoredObject): StoredRecord<T> {
    let value: unknown;
    try {
      value = JSON.parse(object.body);
    } catch (err) {
      throw new CorruptRecordError(key, { cause: err });
    }
    if (!isPlainObject(value) || typeof value.id !== 'string' || typeof value.version !== 'number') {
      throw new CorruptRecordError(key);
    }
    return value as StoredRecord<T>;
  }

  /**
   * One conditional PUT. On a retry (`isRetry`), a failed precondition may be our own earlier attempt
   * whose response was lost (timeout, reset): if the stored body is byte-identical to ours, it is ours.
   */
  async #put(
    key: string,
    body: string,
    record: RecordFields,
    condition: { ifNoneMatch?: '*'; ifMatch?: string },
    signal: AbortSignal | undefined,
    isRetry: boolean,
  ): Promise<{ etag: string }> {
    const input = {
      key,
      body,
      contentType: 'application/json',
      metadata: { version: String(record.version), 'updated-at': record.updatedAt },
      ...condition,
    };
    try {
      return await this.#ctx.store.put(input, { signal });
    } catch (err) {
      if (!(isRetry && err instanceof PreconditionFailedError)) throw err;
      const current = await this.#ctx.store.get(key, { signal });
      // Stryker disable next-line ObjectLiteral: insert and update discard what #put resolves to.
      if (current?.body === body) return { etag: current.etag };
      throw err;
    }
  }
}
