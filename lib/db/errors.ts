import { S3IngestError } from '../errors/index.js';

/** Which part of an S3 key a value was meant for. */
export type KeyPart = 'prefix' | 'tenant' | 'resource' | 'shard' | 'id';

/** Shows a rejected value in a message without letting a huge or binary input flood logs. */
function preview(value: unknown): string {
  if (typeof value !== 'string') return `(${value === null ? 'null' : typeof value})`;
  const shown = value.length > 80 ? `${value.slice(0, 80)}…` : value;
  return JSON.stringify(shown);
}

/** A tenant, resource, id or key prefix does not match the key layout; nothing was read or written. */
export class InvalidKeyError extends S3IngestError {
  override readonly name = 'InvalidKeyError';

  constructor(
    /** The part of the key at fault. */
    readonly part: KeyPart,
    /** The rejected value, as given. */
    readonly value: unknown,
    reason: string,
  ) {
    super(`invalid ${part} ${preview(value)}: ${reason}`);
  }
}

/** `insert` found a record with that id already (S3 answered 412 to `If-None-Match: *`). */
export class RecordExistsError extends S3IngestError {
  override readonly name = 'RecordExistsError';

  constructor(
    readonly resource: string,
    readonly id: string,
    options?: { cause?: unknown },
  ) {
    super(`${resource}/${id} already exists`, options);
  }
}

/** `get` or `update` of an id that has no record. */
export class RecordNotFoundError extends S3IngestError {
  override readonly name = 'RecordNotFoundError';

  constructor(
    readonly resource: string,
    readonly id: string,
    options?: { cause?: unknown },
  ) {
    super(`${resource}/${id} not found`, options);
  }
}

/** `update` lost a race: the record changed between its read and its conditional write (412 on `If-Match`). */
export class ConflictError extends S3IngestError {
  override readonly name = 'ConflictError';

  constructor(
    readonly resource: string,
    readonly id: string,
    /** The ETag the update was based on. */
    readonly expectedEtag: string,
    options?: { cause?: unknown },
  ) {
    super(`${resource}/${id} changed concurrently (expected ETag ${expectedEtag})`, options);
  }
}

/** One schema violation, as reported by the validator. */
export interface ValidationIssue {
  /** JSON Pointer to the offending value (`/customer/email`); `''` for the record itself. */
  instancePath: string;
  /** The field at fault, dotted (`customer.email`), or the missing property for `required`. */
  field: string;
  message: string;
}

/** A record does not match its resource's JSON Schema; nothing was written. */
export class ValidationError extends S3IngestError {
  override readonly name = 'ValidationError';
  /** The first offending field (see `issues` for all). */
  readonly field: string;
  /** JSON Pointer of the first offending value. */
  readonly instancePath: string;

  constructor(
    readonly resource: string,
    readonly issues: readonly ValidationIssue[],
  ) {
    const first = issues[0] ?? { field: '', instancePath: '', message: 'invalid' };
    super(`${resource}: ${first.field === '' ? 'record' : first.field} ${first.message}`);
    this.field = first.field;
    this.instancePath = first.instancePath;
  }
}

/** The connection string cannot be parsed or uses an unsupported scheme. */
export class ConnectionStringError extends S3IngestError {
  override readonly name = 'ConnectionStringError';

  constructor(reason: string) {
    super(`invalid connection string: ${reason}`);
  }
}

/** `db.resource(name)` of a resource never created on this Database, or a method called before `connect()`. */
export class ResourceNotFoundError extends S3IngestError {
  override readonly name = 'ResourceNotFoundError';

  constructor(readonly resource: string) {
    super(`resource ${JSON.stringify(resource)} was not created on this database`);
  }
}

/** The Database was disconnected: it takes no more calls. */
export class DatabaseNotConnectedError extends S3IngestError {
  override readonly name = 'DatabaseNotConnectedError';

  constructor() {
    super('database is disconnected');
  }
}

/** A resource's JSON Schema does not compile (unknown keyword, bad type, unknown format...). */
export class InvalidSchemaError extends S3IngestError {
  override readonly name = 'InvalidSchemaError';

  constructor(
    readonly resource: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`schema of ${resource} is invalid: ${reason}`, options);
  }
}

/** A stored object under a record key is not a JSON object (written by something else, or truncated). */
export class CorruptRecordError extends S3IngestError {
  override readonly name = 'CorruptRecordError';

  constructor(
    readonly key: string,
    options?: { cause?: unknown },
  ) {
    super(`object ${key} is not a JSON record`, options);
  }
}

/**
 * A shard count is not an integer in 1..`max`: a resource's `shards` option (the resource was not created),
 * or a number of shard `groups` (at most the resource's shards).
 */
export class InvalidShardCountError extends S3IngestError {
  override readonly name = 'InvalidShardCountError';

  constructor(
    /** The rejected value, as given. */
    readonly value: unknown,
    max: number,
    /** Which count was rejected. */
    readonly option: 'shards' | 'groups' = 'shards',
  ) {
    super(
      `invalid ${option} ${preview(typeof value === 'number' ? String(value) : value)}: must be an integer in 1..${max}`,
    );
  }
}

/**
 * A `list` cursor that this resource did not hand out: not decodable, of another version, or made for a
 * different shard count. Nothing was read.
 */
export class InvalidCursorError extends S3IngestError {
  override readonly name = 'InvalidCursorError';

  constructor(
    readonly resource: string,
    reason: string,
  ) {
    super(`invalid list cursor for ${resource}: ${reason}`);
  }
}

/**
 * `copyLayout` from one shard count to another already completed for this resource (its completion marker
 * exists): a re-run after ingestion resumed on the new layout would copy back records deleted there since
 * (their tombstones expire). Nothing was copied. Delete the marker (`markerKey`) to copy again knowingly.
 */
export class LayoutCopiedError extends S3IngestError {
  override readonly name = 'LayoutCopiedError';

  constructor(
    /** The completion marker's S3 key. */
    readonly markerKey: string,
    /** When the copy completed (ISO 8601), as the marker says. */
    readonly completedAt: string | undefined,
  ) {
    super(
      `this layout copy already completed${completedAt !== undefined ? ` at ${completedAt}` : ''} (${markerKey}): ` +
        'copying again would bring back records deleted in the new layout since; delete the marker to copy again',
    );
  }
}

/**
 * `removeOldLayout` before `copyLayout` completed for the same two layouts (no completion marker, or a copy
 * that left conflicts): removing the old keys then would lose records. Nothing was removed.
 */
export class LayoutNotCopiedError extends S3IngestError {
  override readonly name = 'LayoutNotCopiedError';

  constructor(
    /** The completion marker's S3 key, not found. */
    readonly markerKey: string,
  ) {
    super(`no completed copy to the new layout (${markerKey} is missing): run copyLayout to the end first`);
  }
}
