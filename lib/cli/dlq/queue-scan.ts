import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  type Message,
  ReceiveMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { S3IngestError } from '../../errors/index.js';

/** SQS refused part of a batch operation on the dead-letter queue; the message names the ids. */
export class DeadLetterQueueError extends S3IngestError {
  override readonly name = 'DeadLetterQueueError';
}

const RECEIVE_BATCH = 10;

export interface ScanOptions {
  /**
   * How long each received message stays hidden while the command works on it. Every message the scan
   * does not delete is handed back (visibility 0) when it ends, so this only bounds how long a crashed
   * command hides messages.
   * @default 30
   */
  readonly visibilitySeconds?: number;
  /** Stop once this many messages were selected. @default no limit */
  readonly limit?: number;
  /** Which messages the scan selects; the others are handed back untouched. @default every message */
  readonly select?: (message: Message) => boolean;
}

/**
 * Walks a queue without losing anything: receives every message once (each stays hidden while the scan
 * runs, so none comes twice), hands the selected ones to `onBatch`, and hands back every message that
 * was not deleted (visibility 0) at the end, also on error. Stops at the first empty receive (long poll of
 * 1 s, which asks every SQS server) or at `limit`.
 */
export class QueueScan {
  readonly #held = new Map<string, string>();

  constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly options: ScanOptions = {},
  ) {}

  /**
   * Scans the queue. `onDone` runs once the scan is over and before the remaining messages are handed
   * back, while every selected message is still hidden (e.g. to delete what was exported).
   */
  async run(
    onBatch: (selected: Message[]) => Promise<void>,
    onDone: () => Promise<void> = async () => {},
  ): Promise<void> {
    const { limit = Number.POSITIVE_INFINITY, select = () => true, visibilitySeconds = 30 } = this.options;
    let selectedCount = 0;
    try {
      while (selectedCount < limit) {
        const { Messages: received = [] } = await this.sqs.send(
          new ReceiveMessageCommand({
            QueueUrl: this.queueUrl,
            MaxNumberOfMessages: RECEIVE_BATCH,
            VisibilityTimeout: visibilitySeconds,
            WaitTimeSeconds: 1,
            MessageAttributeNames: ['All'],
            MessageSystemAttributeNames: ['All'],
          }),
        );
        if (received.length === 0) break;
        const selected: Message[] = [];
        for (const m of received) {
          if (m.MessageId === undefined || m.ReceiptHandle === undefined) continue;
          this.#held.set(m.MessageId, m.ReceiptHandle);
          if (selectedCount < limit && select(m)) {
            selected.push(m);
            selectedCount++;
          }
        }
        if (selected.length > 0) await onBatch(selected);
      }
      await onDone();
    } finally {
      await this.#handBack();
    }
  }

  /** Deletes messages this scan received (after they were safely copied elsewhere). */
  async delete(messages: readonly Message[]): Promise<void> {
    for (let i = 0; i < messages.length; i += RECEIVE_BATCH) {
      const chunk = messages.slice(i, i + RECEIVE_BATCH);
      const out = await this.sqs.send(
        new DeleteMessageBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((m, index) => ({ Id: String(index), ReceiptHandle: m.ReceiptHandle })),
        }),
      );
      for (const m of chunk) if (m.MessageId !== undefined) this.#held.delete(m.MessageId);
      if ((out.Failed ?? []).length > 0) {
        const ids = (out.Failed ?? []).map((f) => chunk[Number(f.Id)]?.MessageId);
        throw new DeadLetterQueueError(`could not delete ${ids.join(', ')} from ${this.queueUrl}`);
      }
    }
  }

  async #handBack(): Promise<void> {
    const handles = [...this.#held.values()];
    this.#held.clear();
    for (let i = 0; i < handles.length; i += RECEIVE_BATCH) {
      await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: handles
            .slice(i, i + RECEIVE_BATCH)
            .map((h, index) => ({ Id: String(index), ReceiptHandle: h, VisibilityTimeout: 0 })),
        }),
      );
    }
  }
}
