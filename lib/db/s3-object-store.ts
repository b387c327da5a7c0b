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

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function isNotFound(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  return name === 'NoSuchKey' || name === 'NotFound' || httpStatus(err) === 404;
}

/** 412 PreconditionFailed, or 409 ConditionalRequestConflict (a concurrent conditional write won). */
function isPreconditionFailure(err: unknown): boolean {
  const name = (err as { name?: string } | undefined)?.name;
  const status = httpStatus(err);
  return (
    name === 'PreconditionFailed' ||
    status === 412 ||
    name === 'ConditionalRequestConflict' ||
    (status === 409 && name !== 'OperationAborted')
  );
}

/**
 * `ObjectStore` over an SDK v3 `S3Client`. Every call passes the caller's signal as `abortSignal`, so an
 * abort (the pool's timeout) destroys the in-flight request and its socket. Build the client with
 * `createS3Client` so the pool, not the SDK, owns retries.
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    readonly client: S3Client,
    readonly bucket: string,
  ) {}

  async put(input: PutObjectInput, options: StoreCallOptions = {}): Promise<{ etag: string }> {
    const command = new PutObjectCommand({
      Bucket: this.bucket,
      Key: input.key,
      Body: input.body,
      ContentType: input.contentType ?? 'application/json',
      ...(input.metadata !== undefined ? { Metadata: input.metadata } : {}),
      ...(input.ifNoneMatch !== undefined ? { IfNoneMatch: input.ifNoneMatch } : {}),
      ...(input.ifMatch !== undefined ? { IfMatch: input.ifMatch } : {}),
    });
    try {
      const out = await this.client.send(command, { abortSignal: options.signal });
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
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
        abortSignal: options.signal,
      });
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
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }), {
        abortSignal: options.signal,
      });
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
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), {
        abortSignal: options.signal,
      });
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  async list(input: ListObjectsInput, options: StoreCallOptions = {}): Promise<ListObjectsPage> {
    const out = await this.client.send(
      new ListObjectsV2Command({
        Bucket: this.bucket,
        Prefix: input.prefix,
        MaxKeys: clampMaxKeys(input.maxKeys),
        ...(input.continuationToken !== undefined ? { ContinuationToken: input.continuationToken } : {}),
      }),
      { abortSignal: options.signal },
    );
    const keys = (out.Contents ?? []).flatMap((o) => (o.Key !== undefined ? [o.Key] : []));
    const token = out.IsTruncated ? out.NextContinuationToken : undefined;
    return { keys, ...(token !== undefined ? { continuationToken: token } : {}) };
  }
}
