import type { ValidationIssue } from './errors.js';
import {
  compareStamps,
  type StampJson,
  stampFromJson,
  stampToJson,
  UNSEQUENCED,
  type WriteStamp,
} from './write-stamp.js';

/** A record's user data: a JSON object. */
type Fields = Record<string, unknown>;

/** The key under which a stored object keeps its sequencing state; reserved, never user data. */
export const SEQ_FIELD = '$seq';

/**
 * Tags of a hidden object (tombstone, pending partial): the stack's lifecycle rule expires objects with
 * this tag after the tombstone horizon. A visible record is written without tags.
 */
export const HIDDEN_TAGS: Readonly<Record<string, string>> = { 's3-ingest-state': 'hidden' };
/** User metadata of a hidden object, so a HEAD tells it from a record (`count()` on odd-sized objects). */
export const HIDDEN_METADATA = { state: 'hidden' } as const;

/** Older than any stamp, for a field no write has touched on a record that has no base yet. */
const NEVER: WriteStamp = { seq: Number.NEGATIVE_INFINITY, tie: '' };

/** One write to apply in order: its stamp decides, not when it arrives. */
export type SequencedWrite =
  | { readonly op: 'insert' | 'upsert' | 'update'; readonly stamp: WriteStamp; readonly data: Fields }
  | { readonly op: 'delete'; readonly stamp: WriteStamp };

/**
 * What a write did: `applied`; `stale` (its effect is already covered by newer writes, or it is a
 * duplicate); `pending` (an update of a record that does not exist at its stamp yet: kept, invisible, until
 * an older upsert creates the record); `exists` (an insert that found a visible record: create-only).
 */
export type SequencedEffect = 'applied' | 'stale' | 'pending' | 'exists';

/**
 * An update newer than the base that the record made by the base refused: merged onto it, the record
 * failed the schema (as the update would have, applied after the base in stamp order). Its fields are left
 * out; it is kept with the base so that every delivery of the base can report it.
 */
export interface RefusedFields {
  readonly stamp: WriteStamp;
  /** The update's fields the record held for it (its fields no newer update had set). */
  readonly data: Fields;
  readonly issues: readonly ValidationIssue[];
}

/**
 * A record as a last-writer-wins map. `base` is the stamp of the newest upsert/insert/delete; every user
 * field carries a stamp: `stamps` lists those newer than `base` (set by later updates), every other field
 * has `base`'s. A field is replaced only by a newer write that touches it (an upsert or delete touches every
 * field, an update its own), so applying the same writes in any order, any number of times, ends in the
 * same state: the one of applying them once in stamp order.
 */
export interface RecordState {
  /** A visible record (the newest base is an upsert/insert), or hidden: a tombstone or a pending partial. */
  exists: boolean;
  /** The newest upsert/insert/delete; `undefined` when only updates were seen (a pending partial). */
  base: WriteStamp | undefined;
  values: Fields;
  stamps: Map<string, WriteStamp>;
  createdAt: string | undefined;
  updatedAt: string;
  version: number;
  /** Updates newer than `base` that the record `base` made refused (`RefusedFields`); reset by a new base. */
  refused: readonly RefusedFields[];
}

export function emptyState(): RecordState {
  return {
    exists: false,
    base: undefined,
    values: {},
    stamps: new Map(),
    refused: [],
    createdAt: undefined,
    updatedAt: '',
    version: 0,
  };
}

export function cloneState(state: RecordState): RecordState {
  return { ...state, values: { ...state.values }, stamps: new Map(state.stamps) };
}

/** Sets a field as an own property, whatever its name (`__proto__` included: no prototype change). */
export function setField(target: Fields, field: string, value: unknown): void {
  Object.defineProperty(target, field, { value, enumerable: true, writable: true, configurable: true });
}

function fieldStamp(state: RecordState, field: string): WriteStamp {
  return state.stamps.get(field) ?? state.base ?? NEVER;
}

function isNewerThanBase(state: RecordState, stamp: WriteStamp): boolean {
  return state.base === undefined || compareStamps(stamp, state.base) > 0;
}

/** Starts a new base at `stamp`: fields set by writes newer than it stay, every other one is dropped. */
function rebase(state: RecordState, stamp: WriteStamp, data: Fields | undefined): void {
  const values: Fields = {};
  const stamps = new Map<string, WriteStamp>();
  for (const [field, fs] of state.stamps) {
    if (compareStamps(fs, stamp) > 0) {
      setField(values, field, state.values[field]);
      stamps.set(field, fs);
    }
  }
  if (data !== undefined) {
    for (const field of Object.keys(data)) if (!stamps.has(field)) setField(values, field, data[field]);
  }
  state.values = values;
  state.stamps = stamps;
  state.base = stamp;
  state.refused = [];
}

/** Applies one write to `state` (mutating it) and says what it did. `now` is the write time (ISO 8601). */
export function applyToState(state: RecordState, write: SequencedWrite, now: string): SequencedEffect {
  if (write.op === 'insert' && state.exists) {
    // The very insert that made the record (same stamp): a redelivery, whatever updates came after it.
    return state.base !== undefined && compareStamps(write.stamp, state.base) === 0 ? 'stale' : 'exists';
  }
  if (!isNewerThanBase(state, write.stamp)) return 'stale';
  switch (write.op) {
    case 'insert':
    case 'upsert':
      rebase(state, write.stamp, write.data);
      state.exists = true;
      state.createdAt = now;
      break;
    case 'delete':
      rebase(state, write.stamp, undefined);
      state.exists = false;
      break;
    case 'update': {
      let changed = false;
      for (const field of Object.keys(write.data)) {
        if (compareStamps(write.stamp, fieldStamp(state, field)) > 0) {
          setField(state.values, field, write.data[field]);
          state.stamps.set(field, write.stamp);
          changed = true;
        }
      }
      if (!changed) return 'stale';
      state.version += 1;
      state.updatedAt = now;
      return state.exists ? 'applied' : 'pending';
    }
  }
  state.version += 1;
  state.updatedAt = now;
  return 'applied';
}

interface SeqJson {
  /** The base stamp; `null` for a pending partial that never had one. */
  b: StampJson | null;
  /** Fields newer than the base. */
  f?: Record<string, StampJson>;
  /** Present (1) on hidden objects: tombstones and pending partials. */
  h?: 1;
  /** The pending partial's field values (hidden objects only). */
  p?: Fields;
  /** `RefusedFields` of the base: `[seq, tie, data, issues]` each. */
  x?: readonly (readonly [number, string, Fields, readonly ValidationIssue[]])[];
}

/**
 * The stored JSON of a state. A visible record is `{ ...fields, id, createdAt, updatedAt, version, $seq }`
 * (what `get` returns, minus `$seq`); a hidden one is `{ id, updatedAt, version, $seq: { h: 1, ... } }`.
 */
export function stateToJson(id: string, state: RecordState): Record<string, unknown> {
  const seq: SeqJson = { b: state.base === undefined ? null : stampToJson(state.base) };
  if (state.stamps.size > 0) {
    const f: Record<string, StampJson> = {};
    for (const [field, stamp] of state.stamps) f[field] = stampToJson(stamp);
    seq.f = f;
  }
  if (state.refused.length > 0) {
    seq.x = state.refused.map((r) => [r.stamp.seq, r.stamp.tie, r.data, r.issues] as const);
  }
  if (!state.exists) {
    seq.h = 1;
    if (Object.keys(state.values).length > 0) seq.p = state.values;
    return { id, updatedAt: state.updatedAt, version: state.version, [SEQ_FIELD]: seq };
  }
  return {
    ...state.values,
    id,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    version: state.version,
    [SEQ_FIELD]: seq,
  };
}

function isPlainObject(value: unknown): value is Fields {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The state of a stored object (parsed JSON, system fields included), or `undefined` when its `$seq` is
 * malformed. An object without `$seq` (written by the plain API) is a visible record older than any write.
 */
export function stateFromJson(
  stored: Fields,
  userFields: (record: Fields) => Fields,
): RecordState | undefined {
  const raw = stored[SEQ_FIELD];
  const common = {
    updatedAt: typeof stored.updatedAt === 'string' ? stored.updatedAt : '',
    version: typeof stored.version === 'number' ? stored.version : 0,
    createdAt: typeof stored.createdAt === 'string' ? stored.createdAt : undefined,
  };
  if (raw === undefined) {
    const values = userFields(stored);
    return { ...common, exists: true, base: UNSEQUENCED, values, stamps: new Map(), refused: [] };
  }
  if (!isPlainObject(raw)) return undefined;
  const base = raw.b === null ? undefined : stampFromJson(raw.b);
  if (raw.b !== null && base === undefined) return undefined;
  const stamps = new Map<string, WriteStamp>();
  if (raw.f !== undefined) {
    if (!isPlainObject(raw.f)) return undefined;
    for (const [field, value] of Object.entries(raw.f)) {
      const stamp = stampFromJson(value);
      if (stamp === undefined) return undefined;
      stamps.set(field, stamp);
    }
  }
  const refused = refusedFromJson(raw.x);
  if (refused === undefined) return undefined;
  const hidden = raw.h === 1;
  if (!hidden && base === undefined) return undefined;
  const values = hidden ? raw.p : userFields(stored);
  if (values !== undefined && !isPlainObject(values)) return undefined;
  return { ...common, exists: !hidden, base, values: { ...(values ?? {}) }, stamps, refused };
}

/** `$seq.x` read back (absent: none), or `undefined` when malformed. */
function refusedFromJson(raw: unknown): RefusedFields[] | undefined {
  if (raw === undefined) return [];
  if (!Array.isArray(raw)) return undefined;
  const refused: RefusedFields[] = [];
  for (const entry of raw as unknown[]) {
    if (!Array.isArray(entry) || entry.length !== 4) return undefined;
    const [seq, tie, data, issues] = entry as unknown[];
    const stamp = stampFromJson([seq, tie]);
    if (stamp === undefined || !isPlainObject(data) || !Array.isArray(issues)) return undefined;
    refused.push({ stamp, data, issues: issues as ValidationIssue[] });
  }
  return refused;
}

/** Whether a parsed stored object is a hidden one (tombstone or pending partial). */
export function isHiddenJson(stored: Fields): boolean {
  const raw = stored[SEQ_FIELD];
  return isPlainObject(raw) && raw.h === 1;
}
