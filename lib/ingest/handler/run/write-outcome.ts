import type { DeadLetter } from '../settle/dead-letter-queue.js';
import type { DeadLetterReason } from '../settle/dead-letter-reason.js';

/** What became of one write. */
export type WriteOutcome =
  /**
   * Applied (or found already applied by an earlier delivery). `refused`: letters for updates acknowledged
   * earlier that this write's record refused (lib/db `RefusedUpdate`); the write is acknowledged only once
   * the dead-letter sink has stored them, else redelivered (a redelivery reports them again).
   */
  | { readonly kind: 'written'; readonly refused?: readonly DeadLetter[] }
  /** Refused for good: goes to the DLQ with `reason`, never retried. */
  | { readonly kind: 'permanent'; readonly reason: DeadLetterReason; readonly error: Error }
  /**
   * Not applied this time (throttling, timeouts, 5xx, deadline, no permits, an earlier write to the same
   * record failed): reported in `batchItemFailures` so SQS redelivers it.
   */
  | { readonly kind: 'transient'; readonly cause: TransientCause; readonly error: unknown }
  /**
   * Not attempted: its prefix's permits were held by others past the time it could wait (`error`, a
   * `SemaphoreTimeoutError`). Deferred (re-sent to its queue, acknowledged) when it can be, else
   * redelivered with cause `permits-unavailable`.
   */
  | { readonly kind: 'out-of-turn'; readonly error: unknown };

export type TransientCause =
  | 'storage'
  | 'deadline'
  | 'permits-unavailable'
  | 'earlier-write-failed'
  | 'dead-letter-failed'
  | 'unexpected';

export const WRITTEN: WriteOutcome = { kind: 'written' };
