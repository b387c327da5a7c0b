import { S3IngestError } from '../errors/index.js';

/**
 * A booking found no slots for its writes before its latest start (the prefix's schedule is booked past it),
 * or was cut short by its deadline. The caller holds nothing from that call.
 */
export class SemaphoreTimeoutError extends S3IngestError {
  override readonly name = 'SemaphoreTimeoutError';

  constructor(
    /** The budget's name. */
    readonly semaphore: string,
    /** Writes the booking asked slots for. */
    readonly min: number,
    /** Epoch ms: its latest start. */
    readonly deadline: number,
    /** Epoch ms of the schedule's first free slot, when that is why it gave up (else undefined). */
    readonly freeAt?: number,
  ) {
    super(
      freeAt === undefined
        ? `rate budget "${semaphore}": no slots for ${min} write(s) before ${new Date(deadline).toISOString()}`
        : `rate budget "${semaphore}": its first free slot is at ${new Date(freeAt).toISOString()}, after the latest start ${new Date(deadline).toISOString()}`,
    );
  }
}

/** A booking or report got arguments no budget can take (writes < 1, non-integers, a latest start that is not a time, ...). */
export class InvalidPermitRequestError extends S3IngestError {
  override readonly name = 'InvalidPermitRequestError';
}

/** A budget was constructed with options that make no sense (a ceiling of 0, an empty name, ...). */
export class InvalidSemaphoreOptionsError extends S3IngestError {
  override readonly name = 'InvalidSemaphoreOptionsError';
}

/** The budgets' table does not exist (DynamoDB `ResourceNotFoundException`). */
export class SemaphoreTableNotFoundError extends S3IngestError {
  override readonly name = 'SemaphoreTableNotFoundError';

  constructor(
    readonly tableName: string,
    options?: { cause?: unknown },
  ) {
    super(
      `budget table "${tableName}" does not exist (create it with DynamoRateBudget.createTable or CDK)`,
      options,
    );
  }
}
