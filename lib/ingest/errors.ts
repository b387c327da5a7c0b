import { S3IngestError } from '../errors/index.js';

/**
 * Why a message (or a write about to be sent) breaks contract v1. Every reason is permanent: the handler
 * moves such a message to the DLQ at once, with the reason as a message attribute, and never retries it.
 */
export type InvalidMessageReason =
  /** The body (or, in the producer, the encoded message) exceeds its byte limit, or `data` exceeds 256,000 bytes as sent. */
  | 'too-large'
  /** The body is not JSON. */
  | 'invalid-json'
  /** A `__proto__`, `constructor` or `prototype` key appears at some depth. */
  | 'forbidden-key'
  /** `v` is present but is not `1`. */
  | 'unsupported-version'
  /**
   * Wrong shape: not an object, a required field missing, an unknown field, `data` of the wrong type, or a
   * number in `data` JSON cannot carry exactly (`1e400`, an integer literal beyond ±(2^53-1)).
   */
  | 'schema'
  /** `op` is not one of insert, upsert, update, delete. */
  | 'invalid-op'
  | 'invalid-tenant'
  | 'invalid-resource'
  | 'invalid-id'
  /** `key` is not 1..128 printable ASCII characters. */
  | 'invalid-key'
  /** `priority` is not an integer in 0..100. */
  | 'invalid-priority'
  /** `seq` is not a non-negative safe integer (negative, fractional, beyond 2^53 - 1, not a number). */
  | 'invalid-seq'
  /** The resource is valid but not declared in `RESOURCES`. */
  | 'unknown-resource'
  /** `upsert`, `update` or `delete` without `id`. */
  | 'missing-id'
  /** `insert`, `upsert` or `update` without `data`. */
  | 'missing-data'
  /** `data` is nested more than 32 levels deep. */
  | 'too-deep';

/** Every reason, in a stable order (for docs, metrics dimensions and exhaustive tests). */
export const INVALID_MESSAGE_REASONS: readonly InvalidMessageReason[] = [
  'too-large',
  'invalid-json',
  'forbidden-key',
  'unsupported-version',
  'schema',
  'invalid-op',
  'invalid-tenant',
  'invalid-resource',
  'invalid-id',
  'invalid-key',
  'invalid-priority',
  'invalid-seq',
  'unknown-resource',
  'missing-id',
  'missing-data',
  'too-deep',
];

/** A message breaks contract v1. Permanent: send it to the DLQ with `reason`, do not retry it. */
export class InvalidMessageError extends S3IngestError {
  override readonly name = 'InvalidMessageError';

  constructor(
    readonly reason: InvalidMessageReason,
    /** Names the field at fault (`tenant`, `data.a.b`, ...) and what is wrong with it. */
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`invalid message (${reason}): ${detail}`, options);
  }
}

/** Why one write of a `sendMany` call was refused before anything was sent. */
export interface InvalidWriteIssue {
  /** Position of the write in the array given to `sendMany`. */
  readonly index: number;
  readonly reason: InvalidMessageReason | 'invalid-message-group';
  readonly detail: string;
}

/** `sendMany` refused the whole call because some writes are invalid; nothing was sent. */
export class InvalidBatchError extends S3IngestError {
  override readonly name = 'InvalidBatchError';

  constructor(readonly issues: readonly InvalidWriteIssue[]) {
    const first = issues[0];
    const head = first === undefined ? '' : `: #${first.index} ${first.reason} (${first.detail})`;
    super(`${issues.length} invalid write(s), nothing sent${head}`);
  }
}

/** SQS did not accept a write, after the producer's retries when the failure was retryable. */
export class SendFailedError extends S3IngestError {
  override readonly name = 'SendFailedError';

  constructor(
    /** SQS error code (`InternalError`, `InvalidParameterValue`, ...) or the SDK error name. */
    readonly code: string,
    /** True when SQS blames the request (not retried); false for server-side or transport failures. */
    readonly senderFault: boolean,
    /** How many SendMessageBatch calls carried this write. */
    readonly attempts: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`send failed after ${attempts} attempt(s): ${code}: ${message}`, options);
  }
}

/** A configuration key (environment variable) is missing or malformed. Thrown once, at cold start. */
export class ConfigError extends S3IngestError {
  override readonly name = 'ConfigError';

  constructor(
    /** The environment variable at fault, e.g. `BUCKET_NAME`; `RESOURCES.<resource>` for one resource's schema. */
    readonly key: string,
    readonly detail: string,
  ) {
    super(`${key}: ${detail}`);
  }
}

/** Shows a rejected value in an error without letting a huge or binary input flood logs. */
export function preview(value: unknown): string {
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…(${value.length} chars)` : value);
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value).slice(0, 40)}`;
}
