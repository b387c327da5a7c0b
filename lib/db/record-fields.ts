import { CorruptRecordError } from './errors.js';
import type { StoredObject } from './object-store.js';
import { SEQ_FIELD } from './sequenced-state.js';

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

/** A JSON object whose prototype is `Object.prototype` or `null` (not an array, class instance or null). */
export function isPlainObject(value: unknown): value is Document {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** `record` without the store's fields (`RecordFields` and `$seq`): what a user wrote. */
export function userFields(record: Document): Document {
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
 * The stored object at `key` as a record's JSON: an object with a string `id` and a numeric `version`
 * (a visible record, a tombstone or a pending partial); anything else is `CorruptRecordError`.
 */
export function parseRecordJson(key: string, object: StoredObject): Document {
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
