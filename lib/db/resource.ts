import { randomUUID } from 'node:crypto';
import { isRecordSize, withParity } from './body-parity.js';
import {
  ConflictError,
  CorruptRecordError,
  RecordExistsError,
  RecordNotFoundError,
  ValidationError,
} from './errors.js';
import { idFromKey, recordKey, resourcePrefix } from './keys.js';
import { GUESS_THRESHOLD, MovingShare } from './moving-share.js';
import {
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
  type StoredObject,
} from './object-store.js';
import { RecordCache } from './record-cache.js';
import { refuseInvalidNewerFields } from './schema-merge.js';
import {
  applyToState,
  cloneState,
  emptyState,
  HIDDEN_METADATA,
  HIDDEN_TAGS,
  isHiddenJson,
  type RecordState,
  type RefusedFields,
  SEQ_FIELD,
  type SequencedWrite,
  stateFromJson,
  stateToJson,
} from './sequenced-state.js';
import type { CallOptions, StorageCalls } from './storage-calls.js';
import { compareStamps, type WriteStamp } from './write-stamp.js';

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

const SYSTEM_FIELDS: ReadonlySet<string> = new Set(['id', 'createdAt', 'updatedAt', 'version', SEQ_FIELD]);

/**
 * Read-decide-write rounds of one `applySequenced` call: a round lost to a concurrent writer (412) re-reads
 * and decides again; past this, `ConflictError` (transient: the message is redelivered).
 */
export const MAX_SEQUENCED_ROUNDS = 5;
/** Priority boost of a sequenced write's PUT over its caller's reads (see `applySequenced`). */
const CONTINUATION_PRIORITY = 0.5;

/**
 * An update accepted earlier (pending, or applied to the record then) that the record made by an older
 * upsert or insert, arriving later, refuses: its fields are left out, as in seq order it would have been
 * refused. Reported with the base that refused it, for its writer to hear of.
 */
export interface RefusedUpdate {
  readonly stamp: WriteStamp;
  /** The update's fields the record held for it. */
  readonly data: Document;
  readonly error: ValidationError;
}

/**
 * What one write of `applySequenced` came to, at its index. `refusedUpdates` (never empty when present) is
 * on an upsert or insert that refused earlier accepted updates: when it was applied, and on every later
 * delivery of it (`stale`), until a newer base replaces the record.
 */
export type SequencedOutcome =
  | { readonly kind: 'applied' | 'stale'; readonly refusedUpdates?: readonly RefusedUpdate[] }
  | { readonly kind: 'pending' }
  | { readonly kind: 'rejected'; readonly error: RecordExistsError | ValidationError };

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
  /**
   * Throws `ValidationError` for partial data whose fields fail the schema on their own (`compileFields`):
   * an update is checked with it on arrival. Absent: updates are checked only merged into their record.
   */
  validateFields?: ((data: unknown) => void) | undefined;
}

function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function userFields(record: Document): Document {
  const out: Document = {};
  for (const key of Object.keys(record)) {
    // defineProperty, not assignment: a `__proto__` key (JSON.parse makes it an own field) stays a field.
    if (!SYSTEM_FIELDS.has(key)) {
      Object.defineProperty(out, key, {
        value: record[key],
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
  }
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
  readonly #cache = new RecordCache();
  /** How often an uncached record turned out absent: when nearly always, new records are not read first. */
  readonly #absent = new MovingShare();
  /** How often a cached ETag was still current: when nearly always (one writer), cached records are not read. */
  readonly #cacheCurrent = new MovingShare();

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
    this.#cache.delete(key);
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
    return isHiddenJson(this.#parseJson(key, object)) ? object.etag : undefined;
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
    this.#cache.delete(key);
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
    this.#cache.delete(key);
    return record;
  }

  /**
   * Deletes a record (and any tombstone or pending partial at its key: the plain API keeps no order);
   * deleting a missing id succeeds.
   */
  async delete(id: string, options: CallOptions = {}): Promise<void> {
    const key = this.keyOf(id);
    await this.#ctx.calls.run((signal) => this.#ctx.store.delete(key, { signal }), options);
    this.#cache.delete(key);
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
    const key = this.keyOf(id);
    const outcomes: SequencedOutcome[] = [];
    const order: number[] = [];
    writes.forEach((write, index) => {
      const refused = write.op === 'delete' ? undefined : this.#refusal(write.op, write.data);
      if (refused === undefined) order.push(index);
      else outcomes[index] = { kind: 'rejected', error: refused };
    });
    // The store's fields (`id`, `version`, `$seq`, ...) in user data are dropped, as the plain API does.
    const userWrites = writes.map(
      (w): SequencedWrite =>
        // Stryker disable next-line StringLiteral: a delete has no data, so `!isPlainObject` alone passes it through; the op test only narrows the type.
        w.op === 'delete' || !isPlainObject(w.data) ? w : { ...w, data: userFields(w.data) },
    );
    order.sort((a, b) => compareStamps(writes[a]!.stamp, writes[b]!.stamp));
    for (let round = 1; ; round++) {
      const current = await this.#currentState(key, writes, options, round === 1);
      const state = cloneState(current.state);
      const changed = this.#decide(id, state, userWrites, order, outcomes);
      if (!changed) return outcomes;
      const hidden = !state.exists;
      const body = withParity(JSON.stringify(stateToJson(id, state)), hidden);
      const input: PutObjectInput = {
        key,
        body,
        contentType: 'application/json',
        metadata: {
          version: String(state.version),
          'updated-at': state.updatedAt,
          ...(hidden ? HIDDEN_METADATA : {}),
        },
        ...(current.etag === undefined ? { ifNoneMatch: '*' as const } : { ifMatch: current.etag }),
        ...(hidden ? { tags: HIDDEN_TAGS } : {}),
      };
      try {
        const { etag } = await this.#ctx.calls.run(
          (signal) => this.#ctx.store.put(input, { signal }),
          // Once read, the record is written before the pool starts reading more (half a level up: never
          // past a caller's higher priority, whose levels are integers): a fresh read conflicts less, and a
          // deadline then stops a tenant with its records written, not all read and none written.
          { ...options, priority: (options.priority ?? 0) + CONTINUATION_PRIORITY },
        );
        if (current.guessed === 'absent') this.#absent.observe(true);
        if (current.guessed === 'cached') this.#cacheCurrent.observe(true);
        this.#cache.set(key, { etag, state, bytes: body.length });
        return outcomes;
      } catch (err) {
        this.#cache.delete(key);
        if (!(err instanceof PreconditionFailedError)) throw err;
        if (current.guessed === 'absent') this.#absent.observe(false);
        if (current.guessed === 'cached') this.#cacheCurrent.observe(false);
        if (round >= MAX_SEQUENCED_ROUNDS)
          throw new ConflictError(this.name, id, current.etag ?? '', { cause: err });
      }
    }
  }

  /**
   * Why a write's data is refused before anything is read: not an object, or the schema (an insert's or
   * upsert's data as a record; an update's fields each on its own, as they would be merged into any record).
   */
  #refusal(op: SequencedWrite['op'], data: unknown): ValidationError | undefined {
    if (!isPlainObject(data)) {
      return new ValidationError(this.name, [{ instancePath: '', field: '', message: 'must be an object' }]);
    }
    const validate = op === 'update' ? this.#ctx.validateFields : this.#ctx.validate;
    try {
      validate?.(userFields(data));
      return undefined;
    } catch (err) {
      if (err instanceof ValidationError) return err;
      throw err;
    }
  }

  /**
   * The state to decide on. On the first round, the read may be skipped by a guess that is usually right
   * (`GUESS_THRESHOLD`): the cached state, when cached ETags have been current; "absent" for an uncached
   * record, when uncached records have been absent, or when every write is an insert (as a plain insert,
   * `If-None-Match: *`). A wrong guess fails its precondition and the next round reads. Every read also
   * tells whether each guess would have been right, so both shares are learnt without paying for misses.
   */
  async #currentState(
    key: string,
    writes: readonly SequencedWrite[],
    options: CallOptions,
    firstRound: boolean,
  ): Promise<{ etag: string | undefined; state: RecordState; guessed?: 'cached' | 'absent' }> {
    const cached = firstRound ? this.#cache.get(key) : undefined;
    if (firstRound) {
      if (cached !== undefined && this.#cacheCurrent.value > GUESS_THRESHOLD)
        return { ...cached, guessed: 'cached' };
      if (
        cached === undefined &&
        (writes.every((w) => w.op === 'insert') || this.#absent.value > GUESS_THRESHOLD)
      ) {
        return { etag: undefined, state: emptyState(), guessed: 'absent' };
      }
    }
    const object = await this.#ctx.calls.run(
      (signal) => this.#ctx.store.get(key, { signal }),
      options,
      'read',
    );
    if (cached !== undefined) this.#cacheCurrent.observe(object?.etag === cached.etag);
    else if (firstRound) this.#absent.observe(object === undefined);
    if (object === undefined) return { etag: undefined, state: emptyState() };
    const state = stateFromJson(this.#parseJson(key, object), userFields);
    if (state === undefined) throw new CorruptRecordError(key);
    this.#cache.set(key, { etag: object.etag, state, bytes: object.body.length });
    return { etag: object.etag, state };
  }

  /**
   * Applies the writes (indices in stamp order) to `state`, filling `outcomes`; true when the state changed.
   * An update whose result fails the schema is undone and rejected, the others go on. An upsert or insert
   * (valid on its own) whose result fails only with the newer updates' fields is applied, and those updates
   * are refused instead (`refuseInvalidNewerFields`): in seq order they came after it.
   */
  #decide(
    id: string,
    state: RecordState,
    writes: readonly SequencedWrite[],
    order: readonly number[],
    outcomes: SequencedOutcome[],
  ): boolean {
    const now = new Date().toISOString();
    const inCall = new Set(order.map((index) => stampKey(writes[index]!.stamp)));
    // A redelivery of the record's base reports the updates it refused again (its letters may be lost).
    const again = (write: SequencedWrite) =>
      isBaseOf(state, write) ? this.#reported(state.refused, inCall) : {};
    let changed = false;
    for (const index of order) {
      const write = writes[index]!;
      const before = cloneState(state);
      const effect = applyToState(state, write, now);
      if (effect === 'exists') {
        const same =
          write.op === 'insert' && canonicalJson(state.values) === canonicalJson(userFields(write.data));
        outcomes[index] = same
          ? { kind: 'stale', ...again(write) }
          : { kind: 'rejected', error: new RecordExistsError(this.name, id) };
        continue;
      }
      if (effect === 'stale') {
        outcomes[index] = { kind: 'stale', ...again(write) };
        continue;
      }
      const refused = state.exists ? this.#invalidity(state) : undefined;
      if (refused !== undefined) {
        if (write.op === 'update') {
          Object.assign(state, before);
          outcomes[index] = { kind: 'rejected', error: refused };
          continue;
        }
        // The data of an upsert or insert was checked up front: only newer updates' fields can fail it.
        const base = refuseInvalidNewerFields(state, (data) => this.#ctx.validate?.(data));
        outcomes[index] = { kind: 'applied', ...this.#reported(base, inCall) };
        changed = true;
        continue;
      }
      outcomes[index] = { kind: effect };
      changed = true;
    }
    return changed;
  }

  /** The schema's refusal of the record `state` holds, or `undefined` when it is valid. */
  #invalidity(state: RecordState): ValidationError | undefined {
    try {
      this.#ctx.validate?.(state.values);
      return undefined;
    } catch (err) {
      if (err instanceof ValidationError) return err;
      throw err;
    }
  }

  /** `refusedUpdates` of an outcome; an update of the same call (`inCall`) has its own outcome instead. */
  #reported(
    refused: readonly RefusedFields[],
    inCall: ReadonlySet<string>,
  ): { refusedUpdates?: RefusedUpdate[] } {
    const reported = refused
      .filter((r) => !inCall.has(stampKey(r.stamp)))
      .map((r) => ({ stamp: r.stamp, data: r.data, error: new ValidationError(this.name, r.issues) }));
    return reported.length > 0 ? { refusedUpdates: reported } : {};
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
            ...(options.cursor !== undefined ? { continuationToken: options.cursor } : {}),
          },
          { signal },
        ),
      options,
      'read',
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

  /**
   * Number of records: pages through the keys (1,000 per request), reading no bodies. Tombstones and
   * pending partials are left out by their size (odd, see body-parity.ts); an odd-sized object of another
   * origin costs one HEAD to tell.
   */
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
        'read',
      );
      const unsure: string[] = [];
      page.keys.forEach((key, index) => {
        if (idFromKey(this.#prefix, key) === undefined) return;
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
    const value = this.#parseJson(key, object);
    if (isHiddenJson(value)) throw new RecordNotFoundError(this.name, id);
    delete value[SEQ_FIELD];
    return { record: value as StoredRecord<T>, etag: object.etag };
  }

  #parseJson(key: string, object: StoredObject): Document {
    let value: unknown;
    try {
      value = JSON.parse(object.body);
    } catch (err) {
      throw new CorruptRecordError(key, { cause: err });
    }
    if (!isPlainObject(value) || typeof value.id !== 'string' || typeof value.version !== 'number') {
      throw new CorruptRecordError(key);
    }
    return value;
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

/** Whether `write` is the upsert or insert that made the visible record `state` holds (a redelivery). */
function isBaseOf(state: RecordState, write: SequencedWrite): boolean {
  return state.exists && state.base !== undefined && compareStamps(write.stamp, state.base) === 0;
}

function stampKey(stamp: WriteStamp): string {
  return JSON.stringify([stamp.seq, stamp.tie]);
}

/** Stable JSON (sorted keys), so equal content compares equal whatever its key order. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
    // Stryker disable next-line StringLiteral: each entry starts with a JSON string after a complete value, so entries stay apart without a separator.
    const fields = entries.join(',');
    return `{${fields}}`;
  }
  return JSON.stringify(value);
}
