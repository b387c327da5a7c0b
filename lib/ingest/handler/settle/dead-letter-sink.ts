import type { DeadLetter, DeadLetterSendOptions } from './dead-letter-queue.js';

/**
 * Where permanent failures go. `DeadLetterQueue` (SQS `SendMessageBatch`) is the production sink;
 * `MemoryDeadLetterSink` keeps letters in process (tests, local runs).
 */
export interface DeadLetterSink {
  /**
   * Stores the letters and resolves to the message ids it could NOT store: those are redelivered, never
   * acknowledged. A sink that rejects stores none of them.
   */
  send(letters: readonly DeadLetter[], options?: DeadLetterSendOptions): Promise<ReadonlySet<string>>;
}
