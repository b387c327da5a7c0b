import { S3IngestError } from '../errors/index.js';

/** Per-call options every storage method takes. */
export interface StoreCallOptions {
  /** Aborts the request (the pool's per-attempt signal); the promise rejects with the signal's reason. */
  signal?: AbortSignal;
}

export interface PutObjectInput {
  key: string;
  body: string;
  /** Default `application/json`. */
  contentType?: string;
  /** User metadata (`x-amz-meta-*`): lowercase ASCII names, small values. */
  metadata?: Record<string, string>;
  /** `'*'`: create only; fails with `PreconditionFailedError` when the key exists. */
  ifNoneMatch?: '*';
  /** Write only if the current object's ETag equals this; `PreconditionFailedError` otherwise (or if absent). */
  ifMatch?: string;
  /**
   * Object tags (`x-amz-tagging`), which lifecycle rules can filter on (hidden records expire by one). A
   * write without tags leaves the new object untagged.
   */
  tags?: Record<string, string>;
}

export interface StoredObject {
  body: string;
  /** The quoted ETag, as S3 returns it (`"d41d8c..."`). */
  etag: string;
  metadata: Record<string, string>;
  contentType?: string;
  lastModified?: Date;
}

export interface ObjectHead {
  etag: string;
  metadata: Record<string, string>;
  size: number;
  lastModified?: Date;
}

export interface ListObjectsInput {
  prefix: string;
  /** Opaque token from the previous page's `continuationToken`. */
  continuationToken?: string;
  /** List only keys after this one (ListObjectsV2 `StartAfter`); a `continuationToken` takes precedence. */
  startAfter?: string;
  /** Page size, 1..1000. Default 1000. */
  maxKeys?: number;
}

export interface ListObjectsPage {
  /** Keys of this page in ascending (UTF-8 binary) order. */
  keys: string[];
  /** The size in bytes of each key's object (same index), when the store reports it. */
  sizes?: number[];
  /** Present when there are more keys. */
  continuationToken?: string;
}

/**
 * The storage a Database writes through: S3 (`S3ObjectStore`) or in-process (`MemoryObjectStore`), with
 * the same semantics, conditional writes included. Missing objects are `undefined`, not errors; a failed
 * precondition is a `PreconditionFailedError`; transport/service failures surface as the SDK shapes them
 * (`name`, `$metadata.httpStatusCode`, `code`) so the pool's retry policy classifies both stores alike.
 */
export interface ObjectStore {
  readonly bucket: string;
  put(input: PutObjectInput, options?: StoreCallOptions): Promise<{ etag: string }>;
  get(key: string, options?: StoreCallOptions): Promise<StoredObject | undefined>;
  head(key: string, options?: StoreCallOptions): Promise<ObjectHead | undefined>;
  /** Idempotent: deleting a missing key succeeds. */
  delete(key: string, options?: StoreCallOptions): Promise<void>;
  list(input: ListObjectsInput, options?: StoreCallOptions): Promise<ListObjectsPage>;
}

/** A conditional write (`ifNoneMatch` / `ifMatch`) was refused: HTTP 412, or 409 on a concurrent one. */
export class PreconditionFailedError extends S3IngestError {
  override readonly name = 'PreconditionFailedError';

  constructor(
    readonly key: string,
    readonly condition: 'if-none-match' | 'if-match',
    options?: { cause?: unknown },
  ) {
    super(`precondition ${condition} failed for ${key}`, options);
  }
}

export const DEFAULT_MAX_KEYS = 1000;

/** Clamps a requested page size into S3's 1..1000. */
export function clampMaxKeys(maxKeys: number | undefined): number {
  if (maxKeys === undefined || !Number.isFinite(maxKeys)) return DEFAULT_MAX_KEYS;
  return Math.min(DEFAULT_MAX_KEYS, Math.max(1, Math.floor(maxKeys)));
}
