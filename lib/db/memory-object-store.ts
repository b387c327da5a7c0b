import { createHash } from 'node:crypto';
import { S3ServiceException } from '@aws-sdk/client-s3';
import type { BehaviourModel, StorageRequestKind } from './behaviour-model.js';
import {
  clampMaxKeys,
  type ListObjectsInput,
  type ListObjectsPage,
  type ObjectHead,
  type ObjectStore,
  PreconditionFailedError,
  type PutObjectInput,
  type StoreCallOptions,
  type StoredObject,
} from './object-store.js';

interface Entry {
  body: string;
  etag: string;
  metadata: Record<string, string>;
  contentType: string;
  lastModified: Date;
  /** The object's tags, as a PUT with `tags` set them. */
  tags?: Record<string, string>;
}

/**
 * The objects of one in-process bucket. Several stores (Databases) on the same `memory://bucket` in one
 * process share it, as they would share an S3 bucket.
 */
export class MemoryBucket {
  readonly objects = new Map<string, Entry>();
  // Sorted lazily: bulk inserts followed by a listing sort once instead of splicing per insert.
  #sorted: string[] | undefined;

  constructor(readonly name: string) {}

  set(key: string, entry: Entry): void {
    if (!this.objects.has(key)) this.#sorted = undefined;
    this.objects.set(key, entry);
  }

  delete(key: string): void {
    if (this.objects.delete(key)) this.#sorted = undefined;
  }

  /** All keys in ascending order (equals S3's UTF-8 binary order for the ASCII keys of the layout). */
  sortedKeys(): string[] {
    this.#sorted ??= [...this.objects.keys()].sort();
    return this.#sorted;
  }

  /** Number of objects (all prefixes). */
  get size(): number {
    return this.objects.size;
  }
}

const registry = new Map<string, MemoryBucket>();

/** The process-wide bucket named `name` (created empty on first use). */
export function memoryBucket(name: string): MemoryBucket {
  let bucket = registry.get(name);
  if (bucket === undefined) {
    bucket = new MemoryBucket(name);
    registry.set(name, bucket);
  }
  return bucket;
}

/** Forgets the process-wide bucket `name` (its objects are dropped). */
export function dropMemoryBucket(name: string): void {
  registry.delete(name);
}

export interface MemoryObjectStoreOptions {
  /** The bucket to use: a name (process-wide registry) or a `MemoryBucket`. */
  bucket: string | MemoryBucket;
  /**
   * Drives every request through an S3 behaviour model: waits its latency on the model's clock (abortable)
   * and turns its outcome into the error the SDK would raise. Default: none (instant, never fails).
   */
  model?: BehaviourModel;
}

function etagOf(body: string): string {
  return `"${createHash('md5').update(body).digest('hex')}"`;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

function serviceError(name: string, status: number, message: string): S3ServiceException {
  return new S3ServiceException({ name, $fault: 'server', $metadata: { httpStatusCode: status }, message });
}

function connectionReset(): Error {
  return Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
}

const notModelled = { outcome: 'ok', latencyMs: 0 } as const;

/**
 * In-process `ObjectStore` with S3's semantics: ETags, user metadata, `If-None-Match: *` and `If-Match`
 * enforced (412 -> `PreconditionFailedError`), ListObjectsV2-style pages and continuation tokens. With a
 * behaviour model it also has S3's latency, per-prefix throttling (503 SlowDown) and faults.
 */
export class MemoryObjectStore implements ObjectStore {
  readonly bucket: string;
  readonly objects: MemoryBucket;
  readonly model: BehaviourModel | undefined;

  constructor(options: MemoryObjectStoreOptions) {
    this.objects = typeof options.bucket === 'string' ? memoryBucket(options.bucket) : options.bucket;
    this.bucket = this.objects.name;
    this.model = options.model;
  }

  async put(input: PutObjectInput, options: StoreCallOptions = {}): Promise<{ etag: string }> {
    await this.#behave('write', input.key, options.signal);
    const current = this.objects.objects.get(input.key);
    if (input.ifNoneMatch === '*' && current !== undefined) {
      throw new PreconditionFailedError(input.key, 'if-none-match');
    }
    if (input.ifMatch !== undefined && current?.etag !== input.ifMatch) {
      throw new PreconditionFailedError(input.key, 'if-match');
    }
    const etag = etagOf(input.body);
    this.objects.set(input.key, {
      body: input.body,
      etag,
      metadata: { ...input.metadata },
      contentType: input.contentType ?? 'application/json',
      lastModified: new Date(),
      ...(input.tags !== undefined ? { tags: { ...input.tags } } : {}),
    });
    return { etag };
  }

  async get(key: string, options: StoreCallOptions = {}): Promise<StoredObject | undefined> {
    await this.#behave('read', key, options.signal);
    const entry = this.objects.objects.get(key);
    if (entry === undefined) return undefined;
    return {
      body: entry.body,
      etag: entry.etag,
      metadata: { ...entry.metadata },
      contentType: entry.contentType,
      lastModified: entry.lastModified,
    };
  }

  async head(key: string, options: StoreCallOptions = {}): Promise<ObjectHead | undefined> {
    await this.#behave('read', key, options.signal);
    const entry = this.objects.objects.get(key);
    if (entry === undefined) return undefined;
    return {
      etag: entry.etag,
      metadata: { ...entry.metadata },
      size: Buffer.byteLength(entry.body),
      lastModified: entry.lastModified,
    };
  }

  async delete(key: string, options: StoreCallOptions = {}): Promise<void> {
    await this.#behave('write', key, options.signal);
    this.objects.delete(key);
  }

  async list(input: ListObjectsInput, options: StoreCallOptions = {}): Promise<ListObjectsPage> {
    await this.#behave('read', input.prefix, options.signal);
    const sorted = this.objects.sortedKeys();
    // A continuation token is the last key listed, base64url; it takes precedence over `startAfter`, as in S3.
    const after =
      input.continuationToken !== undefined
        ? Buffer.from(input.continuationToken, 'base64url').toString('utf8')
        : input.startAfter;
    // First key > `after` and >= prefix, by binary search (an `after` before the prefix bounds nothing).
    const strict = after !== undefined && after >= input.prefix;
    const bound = strict ? after : input.prefix;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const key = sorted[mid]!;
      if (strict ? key <= bound : key < bound) lo = mid + 1;
      else hi = mid;
    }
    const maxKeys = clampMaxKeys(input.maxKeys);
    const keys: string[] = [];
    const sizes: number[] = [];
    let i = lo;
    for (; i < sorted.length && keys.length < maxKeys; i++) {
      const key = sorted[i]!;
      if (!key.startsWith(input.prefix)) break;
      keys.push(key);
      sizes.push(Buffer.byteLength(this.objects.objects.get(key)?.body ?? ''));
    }
    const more = i < sorted.length && sorted[i]!.startsWith(input.prefix);
    const last = keys[keys.length - 1];
    return more && last !== undefined
      ? { keys, sizes, continuationToken: Buffer.from(last, 'utf8').toString('base64url') }
      : { keys, sizes };
  }

  /** Applies the model's decision for one request: wait its latency, then fail the way S3 would, or pass. */
  async #behave(kind: StorageRequestKind, key: string, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) throw abortReason(signal);
    const decision = this.model?.decide(kind, key) ?? notModelled;
    if (decision.outcome === 'stall') {
      // A stall lasts `latencyMs` (the model's stallMs, minutes by default) and then the peer drops it.
      await this.model!.clock.sleep(decision.latencyMs, signal);
      throw connectionReset();
    }
    if (decision.latencyMs > 0) await this.model!.clock.sleep(decision.latencyMs, signal);
    switch (decision.outcome) {
      case 'ok':
        return;
      case 'slowdown':
        throw serviceError('SlowDown', 503, 'Please reduce your request rate.');
      case 'internal-error':
        throw serviceError('InternalError', 500, 'We encountered an internal error. Please try again.');
      case 'reset':
        throw connectionReset();
    }
  }
}
