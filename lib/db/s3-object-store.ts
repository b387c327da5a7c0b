import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
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
import { isSignalScoped, withRequestSignal } from './request-signal.js';

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || httpStatus(err) === 404;
}

/**
 * 412 PreconditionFailed only. S3's 409 `ConditionalRequestConflict` means a concurrent conditional write is
 * in flight and the caller should retry (AWS documentation): it says nothing about whether the key exists,
 * so it stays the SDK's error, which the error taxonomy classes as transient and the pool retries.
 */
function isPreconditionFailure(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'PreconditionFailed' || httpStatus(err) === 412;
}

/**
 * `ObjectStore` over an SDK v3 `S3Client`. The caller's signal aborts the request, destroying it and its
 * socket (the pool's timeout, the invocation's deadline). With a client from `createS3Client` the signal
 * travels in the async context (the client keeps its cached middleware stack); with any other client it is
 * passed per call as `abortSignal`. Build the client with `createS3Client` so the pool, not the SDK, owns
 * retries.
 */
export class S3ObjectStore implements ObjectStore {
  readonly #scoped: boolean;

  constructor(
    readonly client: S3Client,
    readonly bucket: string,
  ) {
    this.#scoped = isSignalScoped(client.config.requestHandler);
  }

  /**
   * One SDK call, cancellable by `signal`. `send` must pass its argument on as `client.send`'s options:
   * `undefined` (no per-call options: the cached middleware stack) unless the client cannot take the signal
   * from the async context.
   */
  #send<T>(
    signal: AbortSignal | undefined,
    send: (options?: { abortSignal: AbortSignal }) => Promise<T>,
  ): Promise<T> {
    if (signal === undefined) return send();
    if (this.#scoped) return withRequestSignal(signal, () => send());
    return send({ abortSignal: signal });
  }

  async put(input: PutObjectInput, options: StoreCallOptions = {}): Promise<{ etag: string }> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: input.key,
      Body: input.body,
      ContentType: input.contentType ?? 'application/json',
      ...(input.metadata !== undefined ? { Metadata: input.metadata } : {}),
      ...(input.ifNoneMatch !== undefined ? { IfNoneMatch: input.ifNoneMatch } : {}),
      ...(input.ifMatch !== undefined ? { IfMatch: input.ifMatch } : {}),
      ...(input.tags !== undefined ? { Tagging: new URLSearchParams(input.tags).toString() } : {}),
    });
    try {
      const out = await this.#send(options.signal, (o) => this.client.send(command, o));
      return { etag: out.ETag ?? '' };
    } catch (err) {
      if (isPreconditionFailure(err) && (input.ifNoneMatch !== undefined || input.ifMatch !== undefined)) {
        throw new PreconditionFailedError(
          input.key,
          input.ifMatch !== undefined ? 'if-match' : 'if-none-match',
          {
            cause: err,
          },
        );
      }
      // If-Match on a missing key: S3 answers 404 NoSuchKey; to the caller that is a failed precondition too.
      if (input.ifMatch !== undefined && isNotFound(err)) {
        throw new PreconditionFailedError(input.key, 'if-match', { cause: err });
      }
      throw err;
    }
  }

  async get(key: string, options: StoreCallOptions = {}): Promise<StoredObject | undefined> {
    try {
      const out = await this.#send(options.signal, (o) =>
        this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), o),
      );
      const body = (await out.Body?.transformToString('utf-8')) ?? '';
      return {
        body,
        etag: out.ETag ?? '',
        metadata: out.Metadata ?? {},
        ...(out.ContentType !== undefined ? { contentType: out.ContentType } : {}),
        ...(out.LastModified !== undefined ? { lastModified: out.LastModified } : {}),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async head(key: string, options: StoreCallOptions = {}): Promise<ObjectHead | undefined> {
    try {
      const out = await this.#send(options.signal, (o) =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), o),
      );
      return {
        etag: out.ETag ?? '',
        metadata: out.Metadata ?? {},
        size: out.ContentLength ?? 0,
        ...(out.LastModified !== undefined ? { lastModified: out.LastModified } : {}),
      };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(key: string, options: StoreCallOptions = {}): Promise<void> {
    try {
      await this.#send(options.signal, (o) =>
        this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), o),
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  async list(input: ListObjectsInput, options: StoreCallOptions = {}): Promise<ListObjectsPage> {
    const command = new ListObjectsV2Command({
      Bucket: this.bucket,
      Prefix: input.prefix,
      MaxKeys: clampMaxKeys(input.maxKeys),
      ...(input.continuationToken !== undefined ? { ContinuationToken: input.continuationToken } : {}),
      ...(input.startAfter !== undefined ? { StartAfter: input.startAfter } : {}),
    });
    const out = await this.#send(options.signal, (o) => this.client.send(command, o));
    const contents = (out.Contents ?? []).filter((o) => o.Key !== undefined);
    const keys = contents.map((o) => o.Key as string);
    // A size the listing leaves out reads as odd, so `count()` checks that object instead of trusting it.
    const sizes = contents.map((o) => o.Size ?? 1);
    const token = out.IsTruncated ? out.NextContinuationToken : undefined;
    return { keys, sizes, ...(token !== undefined ? { continuationToken: token } : {}) };
  }
}
