import { withParity } from './body-parity.js';
import { canonicalJson } from './canonical-json.js';
import { ConflictError, CorruptRecordError, RecordExistsError, ValidationError } from './errors.js';
import { GUESS_THRESHOLD, MovingShare } from './moving-share.js';
import { type ObjectStore, PreconditionFailedError, type PutObjectInput } from './object-store.js';
import { RecordCache } from './record-cache.js';
import { type Document, isPlainObject, parseRecordJson, userFields } from './record-fields.js';
import { refuseInvalidNewerFields } from './schema-merge.js';
import {
  applyToState,
  cloneState,
  emptyState,
  HIDDEN_METADATA,
  HIDDEN_TAGS,
  type RecordState,
  type RefusedFields,
  type SequencedWrite,
  stateFromJson,
  stateToJson,
} from './sequenced-state.js';
import type { CallOptions, StorageCalls } from './storage-calls.js';
import { compareStamps, type WriteStamp } from './write-stamp.js';

/**
 * Read-decide-write rounds of one `applySequenced` call: a round lost to a concurrent writer (412) re-reads
 * and decides again; past this, `ConflictError` (transient: the message is redelivered).
 */
export const MAX_SEQUENCED_ROUNDS = 5;
/** Priority boost of a sequenced write's PUT over its caller's reads (see `SequencedWriter.apply`). */
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

/** What the sequenced-write engine needs of its Resource. */
export interface SequencedWriterContext {
  /** The resource name, for errors. */
  name: string;
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

/**
 * The engine behind `Resource.applySequenced`: read (or guess) the record's state, apply the writes in
 * stamp order, one conditional PUT of the result, again on a lost race. It keeps the state of the records
 * it wrote last (`RecordCache`) and how often each read-skipping guess was right (`MovingShare`); the
 * Resource's other writes `forget` the records they change.
 */
export class SequencedWriter {
  readonly #ctx: SequencedWriterContext;
  readonly #cache = new RecordCache();
  /** How often an uncached record turned out absent: when nearly always, new records are not read first. */
  readonly #absent = new MovingShare();
  /** How often a cached ETag was still current: when nearly always (one writer), cached records are not read. */
  readonly #cacheCurrent = new MovingShare();

  constructor(ctx: SequencedWriterContext) {
    this.#ctx = ctx;
  }

  /** Drops the cached state of the record at `key` (written by another path). */
  forget(key: string): void {
    this.#cache.delete(key);
  }

  /**
   * Applies `writes` to record `id` at `key`, as `Resource.applySequenced` documents. The PUT goes half a
   * priority level above the caller's reads (`CONTINUATION_PRIORITY`).
   */
  async apply(
    id: string,
    key: string,
    writes: readonly SequencedWrite[],
    options: CallOptions,
  ): Promise<SequencedOutcome[]> {
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
          throw new ConflictError(this.#ctx.name, id, current.etag ?? '', { cause: err });
      }
    }
  }
  /**
   * Why a write's data is refused before anything is read: not an object, or the schema (an insert's or
   * upsert's data as a record; an update's fields each on its own, as they would be merged into any record).
   */
  #refusal(op: SequencedWrite['op'], data: unknown): ValidationError | undefined {
    if (!isPlainObject(data)) {
      return new ValidationError(this.#ctx.name, [
        { instancePath: '', field: '', message: 'must be an object' },
      ]);
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
    const state = stateFromJson(parseRecordJson(key, object), userFields);
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
          : { kind: 'rejected', error: new RecordExistsError(this.#ctx.name, id) };
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
      .map((r) => ({ stamp: r.stamp, data: r.data, error: new ValidationError(this.#ctx.name, r.issues) }));
    return reported.length > 0 ? { refusedUpdates: reported } : {};
  }
}

/** Whether `write` is the upsert or insert that made the visible record `state` holds (a redelivery). */
function isBaseOf(state: RecordState, write: SequencedWrite): boolean {
  return state.exists && state.base !== undefined && compareStamps(write.stamp, state.base) === 0;
}

function stampKey(stamp: WriteStamp): string {
  return JSON.stringify([stamp.seq, stamp.tie]);
}
