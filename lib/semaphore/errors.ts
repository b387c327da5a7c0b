import { S3IngestError } from '../errors/index.js';

/** `acquire` could not get `min` permits before its deadline. The caller holds nothing from that call. */
export class SemaphoreTimeoutError extends S3IngestError {
  override readonly name = 'SemaphoreTimeoutError';

  constructor(
    readonly semaphore: string,
    readonly min: number,
    readonly deadline: number,
    /**
     * Epoch ms at which the holders in the way said they would be done (an adaptive semaphore whose
     * holders announced it), when that is why the acquire gave up before its deadline; else undefined.
     */
    readonly freeAt?: number,
    /**
     * Epoch ms at which the holders in the way said they would be done, when they all said so: `freeAt` when
     * the acquire gave up early for it, or a time already past when it waited until its deadline for holders
     * running late (they may be done any moment: a caller retrying soon is likely next). Else undefined.
     */
    readonly dueAt: number | undefined = freeAt,
  ) {
    super(
      freeAt === undefined
        ? `semaphore "${semaphore}": could not acquire ${min} permit(s) before the deadline ${new Date(deadline).toISOString()}`
        : `semaphore "${semaphore}": ${min} permit(s) are not expected free before ${new Date(freeAt).toISOString()}, after the deadline ${new Date(deadline).toISOString()}`,
    );
  }
}

/** `acquire(k, { min })` or `extend(ms)` got arguments no semaphore can satisfy (k <= 0, k > limit, min > k, non-integers). */
export class InvalidPermitRequestError extends S3IngestError {
  override readonly name = 'InvalidPermitRequestError';
}

/** A semaphore or sizing helper was constructed with options that make no sense (limit 0, shards > limit, ...). */
export class InvalidSemaphoreOptionsError extends S3IngestError {
  override readonly name = 'InvalidSemaphoreOptionsError';
}

/** The shape a semaphore was stored with: its total permits and how many shard items they are split over. */
export interface SemaphoreShape {
  limit: number;
  shards: number;
}

/**
 * The shard items of a semaphore disagree with each other on their shard count (not a layout this code
 * writes), so no capacity can be derived from them. A process configured with another `limit` or `shards`
 * is not an error: it rewrites the capacity for its limit and adopts the stored shard count (README).
 */
export class SemaphoreConfigMismatchError extends S3IngestError {
  override readonly name = 'SemaphoreConfigMismatchError';

  constructor(
    readonly semaphore: string,
    readonly stored: SemaphoreShape,
    readonly configured: SemaphoreShape,
  ) {
    super(
      `semaphore "${semaphore}" is stored with limit ${stored.limit} over ${stored.shards} shard(s), ` +
        `but this process is configured with limit ${configured.limit} over ${configured.shards} shard(s)`,
    );
  }
}

/** The semaphore table does not exist (DynamoDB `ResourceNotFoundException`). */
export class SemaphoreTableNotFoundError extends S3IngestError {
  override readonly name = 'SemaphoreTableNotFoundError';

  constructor(
    readonly tableName: string,
    options?: { cause?: unknown },
  ) {
    super(
      `semaphore table "${tableName}" does not exist (create it with DynamoSemaphore.createTable or CDK)`,
      options,
    );
  }
}

/** `extend` found the lease's holder entry gone: it expired and another acquirer reclaimed its permits. */
export class LeaseLostError extends S3IngestError {
  override readonly name = 'LeaseLostError';

  constructor(
    readonly semaphore: string,
    readonly fence: string,
  ) {
    super(`semaphore "${semaphore}": lease ${fence} was reclaimed after it expired; its permits are gone`);
  }
}
