import { randomUUID } from 'node:crypto';
import { isRecordSize, withParity } from './body-parity.js';
import { ConflictError, RecordExistsError, RecordNotFoundError, ValidationError } from './errors.js';
import { decodeShardCursor, encodeShardCursor, refuseShardCursor } from './list-cursor.js';
import { type ListObjectsInput, type ListObjectsPage, PreconditionFailedError } from './object-store.js';
import {
  type Document,
  isPlainObject,
  parseRecordJson,
  type RecordFields,
  type StoredRecord,
  userFields,
} from './record-fields.js';
import { ResourceLayout } from './resource-layout.js';
import { HIDDEN_METADATA, isHiddenJson, SEQ_FIELD, type SequencedWrite } from './sequenced-state.js';
import { type SequencedOutcome, SequencedWriter, type SequencedWriterContext } from './sequenced-writer.js';
import { mergeShardListings } from './sharded-list.js';
import type { CallOptions } from './storage-calls.js';

export type { Document, RecordFields, StoredRecord } from './record-fields.js';
export type { CallOptions } from './storage-calls.js';

export interface InsertOptions extends CallOptions {
  /** The record id. Default: `data.id` when it is a string, else a random UUID. */
  id?: string;
}

export interface ListOptions extends CallOptions {
  /** Records per page, 1..1000. Default 100. */
  limit?: number;
  /** `cursor` of the previous page; a sharded resource refuses one it did not hand out (`InvalidCursorError`). */
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

/** What a Resource needs from its Database: the sequenced-write engine's needs, plus where its keys live. */
export interface ResourceContext extends SequencedWriterContext {
  tenant: string;
  prefix: string;
  /** How many prefixes the records are spread over (`CreateResourceOptions.shards`); default 1. */
  shards?: number;
}

/**
 * One collection of records under `<prefix>t=<tenant>/r=<name>/`, or spread over its `shards` prefixes
 * `.../r=<name>/s=<shard>/` (`ResourceLayout`). Every storage call goes through the Database's
 * `StorageCalls` (its ExecutorPool, if it has one), one pool task per S3 request.
 */
export class Resource<T extends Document = Document> {
  readonly name: string;
  /** How many prefixes the records are spread over (1: unsharded). */
  readonly shards: number;
  readonly #ctx: ResourceContext;
  readonly #layout: ResourceLayout;
  /** The engine of `applySequenced`; it caches the records it wrote, which the other writes make it forget. */
  readonly #sequenced: SequencedWriter;

  constructor(ctx: ResourceContext) {
    this.#ctx = ctx;
    this.name = ctx.name;
    this.#layout = new ResourceLayout(ctx.tenant, ctx.name, ctx.prefix, ctx.shards);
    this.shards = this.#layout.shards;
    this.#sequenced = new SequencedWriter(ctx);
  }

  /** The S3 key of record `id` (validated), in its shard when the resource is sharded. */
  keyOf(id: string): string {
    return this.#layout.keyOf(id);
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
      if (!(err instanceof PreconditionFailedError)) throw err;
      // A tombstone or pending partial holds the key but no record: the insert replaces it, if unchanged.
      const hidden = await this.#readHidden(key, options);
      if (hidden === undefined) throw new RecordExistsError(this.name, id, { cause: err });
      try {
        await this.#ctx.calls.run(
          (signal, attempt) => this.#put(key, body, record, { ifMatch: hidden }, signal, attempt > 1),
          options,
        );
      } catch (retryErr) {
        if (retryErr instanceof PreconditionFailedError)
          throw new RecordExistsError(this.name, id, { cause: retryErr });
        throw retryErr;
      }
    }
    this.#sequenced.forget(key);
    return record;
  }

  /** The ETag of the object at `key` when it is hidden (tombstone, pending partial), else `undefined`. */
  async #readHidden(key: string, options: CallOptions): Promise<string | undefined> {
    const object = await this.#ctx.calls.run(
      (signal) => this.#ctx.store.get(key, { signal }),
      options,
      'read',
    );
    if (object === undefined) return undefined;
    return isHiddenJson(parseRecordJson(key, object)) ? object.etag : undefined;
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
    this.#sequenced.forget(key);
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
    this.#sequenced.forget(key);
    return record;
  }

  /**
   * Deletes a record (and any tombstone or pending partial at its key: the plain API keeps no order);
   * deleting a missing id succeeds.
   */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const key = this.keyOf(id);
    await this.#ctx.calls.run((signal) => this.#ctx.store.delete(key, { signal }), options);
    this.#sequenced.forget(key);
  }

  /**
   * Applies sequenced writes to record `id`: their effect is that of applying each once in stamp order
   * (`seq`, then `tie`), whatever was applied before and in whatever order (see the db README: the record
   * is a last-writer-wins map of its top-level fields; deletes leave tombstones). All of them become one
   * conditional PUT of the merged result (`If-Match` on the ETag read, `If-None-Match: *` when absent),
   * none when nothing changes; a PUT lost to a concurrent writer re-reads and decides again, up to
   * `MAX_SEQUENCED_ROUNDS` rounds, then `ConflictError`. The state read comes from a per-Resource cache of
   * records this process wrote last, when it has one, so a record written in order is one PUT per call.
   *
   * Resolves to one outcome per write, at its index: `applied`, `stale` (covered by newer writes, or a
   * duplicate), `pending` (an update of a record that does not exist at its stamp: kept hidden until an
   * older upsert creates it), or `rejected` with `ValidationError` (the data, or the record it makes,
   * fails the schema; its effect is left out) or `RecordExistsError` (an insert finding a visible record
   * with other content). Rejects only for storage failures, for the whole call.
   */
  async applySequenced(
    id: string,
    writes: readonly SequencedWrite[],
    options: CallOptions = {},
  ): Promise<SequencedOutcome[]> {
    return this.#sequenced.apply(id, this.keyOf(id), writes, options);
  }

  /**
   * One page of records in key order (`id=<id>.json`, byte-wise: id order, but for ids that are a prefix of
   * another's): a ListObjectsV2 of the resource prefix, or a k-way merge of the shards' listings
   * (`mergeShardListings`: one LIST per shard a page), then the page's GETs through the pool. Records
   * deleted between the listing and the read are left out, so a page may hold fewer than `limit` items;
   * `cursor` is absent on the last page.
   */
  async list(options: ListOptions = {}): Promise<ListPage<T>> {
    // What is not a number (NaN: `Number()` of a missing parameter) takes the default: clamped, NaN would
    // compare false with every count.
    const asked = Math.floor(Number(options.limit ?? 100));
    const limit = Number.isNaN(asked) ? 100 : Math.min(1000, Math.max(1, asked));
    const listPage = (input: ListObjectsInput) =>
      this.#ctx.calls.run((signal) => this.#ctx.store.list(input, { signal }), options, 'read');
    if (this.shards === 1) {
      // A cursor of a sharded layout (this resource before resharding) is no S3 token: refused as such.
      if (options.cursor !== undefined) refuseShardCursor(this.name, options.cursor);
      const page = await listPage({
        prefix: this.#layout.prefixOf(0),
        maxKeys: limit,
        ...(options.cursor !== undefined ? { continuationToken: options.cursor } : {}),
      });
      const items = await this.#readListed(
        page.keys.map((key) => this.#layout.idAt(0, key)),
        options,
      );
      return page.continuationToken !== undefined ? { items, cursor: page.continuationToken } : { items };
    }
    const position =
      options.cursor !== undefined ? decodeShardCursor(this.name, this.shards, options.cursor) : undefined;
    const merged = await mergeShardListings(
      this.#layout.prefixes,
      limit,
      position,
      listPage,
      (shard, key) => this.#layout.idAt(shard, key) !== undefined,
    );
    const items = await this.#readListed(
      merged.keys.map(({ shard, key }) => this.#layout.idAt(shard, key)),
      options,
    );
    const last = merged.keys.at(-1);
    if (!merged.more || last === undefined) return { items };
    const lastPosition = last.key.slice(this.#layout.prefixOf(last.shard).length);
    return { items, cursor: encodeShardCursor(this.shards, lastPosition) };
  }

  /** The records of listed ids (`undefined`: not a record key), in order; ones gone since are left out. */
  async #readListed(
    ids: ReadonlyArray<string | undefined>,
    options: CallOptions,
  ): Promise<StoredRecord<T>[]> {
    const read = await Promise.all(
      ids.map((id) =>
        id === undefined
          ? undefined
          : this.#read(id, options).then(
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
    return items;
  }

  /**
   * Number of records: pages through the keys (1,000 per request; every shard at once), reading no bodies. Tombstones and
   * pending partials are left out by their size (odd, see body-parity.ts); an odd-sized object of another
   * origin costs one HEAD to tell.
   */
  async count(options: CallOptions = {}): Promise<number> {
    const counts = await Promise.all(
      this.#layout.prefixes.map((_, shard) => this.#countShard(shard, options)),
    );
    return counts.reduce((sum, n) => sum + n, 0);
  }

  /** The records under shard `shard`'s prefix (the resource prefix when unsharded), as `count` counts them. */
  async #countShard(shard: number, options: CallOptions): Promise<number> {
    const prefix = this.#layout.prefixOf(shard);
    let total = 0;
    let token: string | undefined;
    do {
      const continuationToken = token;
      const page: ListObjectsPage = await this.#ctx.calls.run(
        (signal) =>
          this.#ctx.store.list(
            { prefix, maxKeys: 1000, ...(continuationToken ? { continuationToken } : {}) },
            { signal },
          ),
        options,
        'read',
      );
      const unsure: string[] = [];
      page.keys.forEach((key, index) => {
        if (this.#layout.idAt(shard, key) === undefined) return;
        const size = page.sizes?.[index];
        if (size !== undefined && isRecordSize(size)) total += 1;
        else if (size !== 0) unsure.push(key);
      });
      const heads = await Promise.all(
        unsure.map((key) =>
          this.#ctx.calls.run((signal) => this.#ctx.store.head(key, { signal }), options, 'read'),
        ),
      );
      for (const head of heads)
        if (head !== undefined && head.metadata.state !== HIDDEN_METADATA.state) total += 1;
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

  /** A visible record: a tombstone or pending partial reads as missing (`RecordNotFoundError`). */
  async #read(id: string, options: CallOptions): Promise<{ record: StoredRecord<T>; etag: string }> {
    const key = this.keyOf(id);
    const object = await this.#ctx.calls.run(
      (signal) => this.#ctx.store.get(key, { signal }),
      options,
      'read',
    );
    if (object === undefined) throw new RecordNotFoundError(this.name, id);
    const value = parseRecordJson(key, object);
    if (isHiddenJson(value)) throw new RecordNotFoundError(this.name, id);
    delete value[SEQ_FIELD];
    return { record: value as StoredRecord<T>, etag: object.etag };
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
  ): Promise<void> {
    const input = {
      key,
      body: withParity(body, false),
      contentType: 'application/json',
      metadata: { version: String(record.version), 'updated-at': record.updatedAt },
      ...condition,
    };
    try {
      await this.#ctx.store.put(input, { signal });
    } catch (err) {
      if (!(isRetry && err instanceof PreconditionFailedError)) throw err;
      const current = await this.#ctx.store.get(key, { signal });
      if (current?.body !== input.body) throw err;
    }
  }
}
