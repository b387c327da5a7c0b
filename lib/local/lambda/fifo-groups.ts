import type { SQSRecord } from 'aws-lambda';
import { InvalidLocalOptionError } from '../errors.js';

/** Lambda's SQS FIFO event sources: at most 10 records a batch, no batching window. */
const FIFO_MAX_BATCH_SIZE = 10;

/** Refuses runner settings Lambda refuses for a FIFO queue. */
export function checkFifoOptions(options: { batchSize: number; maximumBatchingWindowMs: number }): void {
  if (options.batchSize > FIFO_MAX_BATCH_SIZE) {
    throw new InvalidLocalOptionError(
      'batchSize',
      `at most ${FIFO_MAX_BATCH_SIZE} on a FIFO queue (as in Lambda)`,
    );
  }
  if (options.maximumBatchingWindowMs !== 0) {
    throw new InvalidLocalOptionError(
      'maximumBatchingWindowMs',
      'FIFO queues have no batching window (as in Lambda)',
    );
  }
}

/**
 * One running invocation per FIFO message group. SQS itself hands out no message of a group while another
 * of it is in flight; this holds the runner to the same rule whatever the backend does: `hold` waits until
 * every group of the batch is free, takes them, and returns the release.
 */
export class FifoGroupLocks {
  readonly #held = new Map<string, Promise<void>>();

  async hold(records: readonly SQSRecord[]): Promise<() => void> {
    const groups = [
      ...new Set(
        records.flatMap((r) =>
          r.attributes.MessageGroupId === undefined ? [] : [r.attributes.MessageGroupId],
        ),
      ),
    ];
    if (groups.length === 0) return () => {};
    for (;;) {
      const busy = groups.map((g) => this.#held.get(g)).filter((p) => p !== undefined);
      if (busy.length === 0) break;
      await Promise.all(busy);
    }
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    for (const group of groups) this.#held.set(group, released);
    return () => {
      for (const group of groups) if (this.#held.get(group) === released) this.#held.delete(group);
      release();
    };
  }
}
