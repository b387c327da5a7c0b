import { S3IngestError } from '../../errors/index.js';

/**
 * A stage tried to give a record a second final outcome (or to change one). Final outcomes never change:
 * this is a bug of the stage, and the record keeps the outcome it had.
 */
export class OutcomeAlreadySettledError extends S3IngestError {
  override readonly name = 'OutcomeAlreadySettledError';

  constructor(
    readonly messageId: string,
    readonly settled: string,
    readonly attempted: string,
  ) {
    super(`record ${messageId} is already ${settled}; refusing to make it ${attempted}`);
  }
}

/** A stage named a record that is not in the batch. */
export class UnknownRecordError extends S3IngestError {
  override readonly name = 'UnknownRecordError';

  constructor(readonly messageId: string) {
    super(`record ${messageId} is not in this batch`);
  }
}

/** An insert's 412 said the record exists; the read that followed found none (a concurrent delete). */
export class RecordVanishedError extends S3IngestError {
  override readonly name = 'RecordVanishedError';
  constructor(
    readonly id: string,
    cause: unknown,
  ) {
    super(`record ${id} existed at the conditional write and was gone when read back`, { cause });
  }
}

/** What an invocation's deadline signal aborts with: its cutoff (`DEADLINE_MARGIN_MS` before the timeout) came. */
export class InvocationDeadlineReachedError extends S3IngestError {
  override readonly name = 'InvocationDeadlineReachedError';

  constructor() {
    super('invocation deadline margin reached');
  }
}

/** What an invocation's settle signal aborts with: the part of the margin left for dead letters is spent. */
export class SettleBudgetSpentError extends S3IngestError {
  override readonly name = 'SettleBudgetSpentError';

  constructor() {
    super('invocation settle budget spent');
  }
}
